"""Running the registry as a service: readiness and service figures, status, access tokens.

Owns `health` (readiness, `/v1/status`), `status` (`skillreg status`: storage figures and
pending materialisations) and `tokens` (HTTP access tokens, stored hashed).
"""
