"""History and the owner's rules over it: versions, diffs, proposals and controls.

Owns paged history (`versions`), diffs (`diff`), proposals and their decisions
(`proposals`), content-check approvals (`approvals`), source exclusion (`exclusions`) and the
owner controls with the skill's state (`controls`), and the rescan when the content rules
change with the reviews it opens (`rescan`). Writes go through `services.write`.
"""
