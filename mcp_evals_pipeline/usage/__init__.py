"""Usage evals: an agent uses a server's tools against a recording fake world and is marked on what happened."""
