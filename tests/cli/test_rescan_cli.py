"""`skillreg rescan` and `skillreg reviews` end to end, through the command line."""

from __future__ import annotations

from tests.support.cli import run, run_json


def test_rescan_wait_runs_to_the_end_and_its_progress_is_listed(embedded):
    run("init")
    run("demo", "-w", "acme")  # three example skills
    first = run_json("rescan", "--wait")
    job = first["job"]
    assert (job["status"], job["workspace"], job["kind"]) == ("succeeded", "*", "rescan")
    assert job["progress"]["done"] == job["progress"]["total"] == job["result"]["checked"] == 3
    assert (job["result"]["blocked"], job["result"]["paused"]) == (0, 0)
    assert first["ruleset"].startswith("default-")
    # The same rules again: every package was checked already.
    again = run("rescan", "-w", "acme", "--wait")
    assert "3 of 3 packages checked with the current rules" in again
    assert run_json("rescan", "-w", "acme", "--wait")["job"]["result"]["checked"] == 0
    queued = run_json("rescan", "-w", "acme")["job"]
    assert queued["status"] == "queued"
    listed = run_json("jobs", "list", "-w", "acme")["items"]
    assert [(j["kind"], j["status"]) for j in listed][:2] == [
        ("rescan", "queued"),
        ("rescan", "succeeded"),
    ]
    shown = run("jobs", "show", job["id"])
    assert f"job {job['id']} rescan of every workspace: succeeded, 3 of 3 packages" in shown
    assert run_json("reviews", "list", "-w", "acme")["items"] == []
    assert "no open reviews" in run("reviews", "list", "-w", "acme")
    run("reviews", "approve", "7", "-w", "acme", code=5)
    run("rescan", "-w", "not a name", code=2)
