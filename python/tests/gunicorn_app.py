"""A WSGI app for ``gunicorn --preload`` (test_fleet_fork.py): its breaker is made, its
store connected and the breaker joined at import, in gunicorn's master, before the
workers are forked. Each request runs one trip and probe round in the worker that serves
it (forkcase.round_trip) and answers what it saw, as JSON."""

import json
import os

from forkcase import STORE, breaker, round_trip
from tripgate.fleet import FleetStore

NAME = os.environ["TRIPGATE_FLEET"]
made, clock, _ = breaker(NAME)
store = FleetStore.connect(os.environ["TRIPGATE_REDIS_URL"], **STORE)
fleet = store.join(NAME, made)
MASTER = os.getpid()


def app(environ, start_response):
    seen = round_trip(fleet, made, clock)
    seen["master"] = MASTER
    body = json.dumps(seen).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
