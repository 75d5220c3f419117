"""Entry point: python src/server.py."""

import os

from notes_app.app import app

if __name__ == "__main__":
    app.run("streamable-http", host="0.0.0.0", port=int(os.environ["PORT"]), streamable_http_path="/mcp")
