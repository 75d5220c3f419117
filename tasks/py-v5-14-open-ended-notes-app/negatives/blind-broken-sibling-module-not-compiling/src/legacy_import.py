"""Import notes exported by the old (Python 2) notebook tool."""

import json


def import_legacy_notes(path, store):
    data = json.load(open(path))
    for item in data.get("notes", []):
        store.create(item["title"], item.get("body", u""), item.get("tags", []))
    print "imported %d legacy notes" % len(data.get("notes", []))
