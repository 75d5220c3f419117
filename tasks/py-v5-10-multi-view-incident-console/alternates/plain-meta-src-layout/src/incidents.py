"""The seeded incidents (read-only)."""

INCIDENTS = [
    {"id": "INC-101", "title": "Checkout latency above 2 seconds", "severity": "sev2", "status": "investigating",
     "responders": ["Marcus Lee", "Ana Costa"]},
    {"id": "INC-102", "title": "Payment webhooks failing", "severity": "sev1", "status": "mitigated",
     "responders": ["Priya Shah"]},
    {"id": "INC-103", "title": "Search index stale", "severity": "sev3", "status": "resolved",
     "responders": ["Hana Kim", "Oren Katz"]},
]


def find(incident_id: str) -> dict | None:
    return next((i for i in INCIDENTS if i["id"] == incident_id), None)
