"""Assets by domain: trials, SQL models, reports."""
