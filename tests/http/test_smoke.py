from tests.support.packages import skill_md


async def test_smoke(served):
    c = served.client
    r = await c.get("/healthz")
    assert r.status_code == 200, r.text
    r = await c.get("/readyz")
    assert r.status_code == 200, r.text
    files = {"SKILL.md": ("SKILL.md", skill_md("demo")), "scripts/run.py": ("run.py", b"print(1)\n")}
    r = await c.put("/v1/workspaces/acme/skills/demo", files=files,
                    data={"meta": '{"executable": ["scripts/run.py"]}'},
                    headers={"If-None-Match": "*", **served.auth("write")})
    assert r.status_code == 201, r.text
    etag = r.headers["etag"]
    r = await c.get("/v1/workspaces/acme/skills/demo", headers=served.auth("read"))
    assert r.status_code == 200, r.text
    assert r.headers["etag"] == etag
    print(r.json())
    r = await c.get("/v1/workspaces/acme/skills/demo/archive", headers=served.auth("read"))
    assert r.status_code == 200
    print(len(r.content))
    r = await c.get("/metrics")
    print(r.text[:3000])
    r = await c.get("/v1/status", headers=served.auth("admin"))
    print(r.status_code, r.text)
