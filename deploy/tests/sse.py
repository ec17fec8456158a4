"""A small HTTP + Server-Sent Events client on http.client (no dependencies),
enough to talk to Weft through nginx the way a browser does."""

import http.client
import json


class Http:
    def __init__(self, port, token, timeout=15):
        self.port, self.token, self.timeout = port, token, timeout

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        hdrs = {"authorization": f"Bearer {self.token}"}
        if body is not None:
            hdrs["content-type"] = "application/json"
            body = json.dumps(body)
        hdrs.update(headers or {})
        conn.request(method, path, body=body, headers=hdrs)
        return conn, conn.getresponse()

    def json(self, method, path, body=None):
        conn, resp = self.request(method, path, body)
        try:
            data = resp.read()
            if resp.status >= 300:
                raise AssertionError(f"{method} {path}: {resp.status} {data[:300]!r}")
            return json.loads(data) if data else None
        finally:
            conn.close()

    def status(self, path):
        conn, resp = self.request("GET", path)
        try:
            resp.read()
            return resp.status
        finally:
            conn.close()


class EventStream:
    """Run events from an open text/event-stream response, one at a time.
    `next()` is None when the stream ends, cleanly or cut."""

    def __init__(self, conn, resp):
        if resp.status != 200 or not resp.getheader("content-type", "").startswith("text/event-stream"):
            raise AssertionError(f"not an event stream: {resp.status} {resp.read()[:300]!r}")
        self.conn, self.resp = conn, resp
        self.cut = False

    def next(self):
        data, seq = [], None
        while True:
            try:
                line = self.resp.readline()
            except (http.client.IncompleteRead, ConnectionError, OSError):
                self.cut = True
                return None
            if not line:
                self.cut = True
                return None
            line = line.decode().rstrip("\r\n")
            if line == "":
                if data:
                    event = json.loads("\n".join(data))
                    assert seq is None or int(seq) == event["seq"], f"id {seq} for seq {event['seq']}"
                    return event
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "id":
                seq = value

    def close(self):
        self.conn.close()
