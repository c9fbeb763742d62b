"""`RemoteMonitor`: posts each epoch's logs to an HTTP server (Keras's callback,
over the standard library's `urllib` instead of `requests`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import warnings

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.RemoteMonitor")
class RemoteMonitor(Callback):
    """Sends `{"epoch": epoch, **logs}` to `root + path` with an HTTP POST at the
    end of every epoch.

    The JSON-encoded dict travels as the form field `field`
    (`application/x-www-form-urlencoded`), or as the request body with
    `send_as_json=True` (`application/json`). A server that cannot be reached
    gives a warning naming `root`; training goes on.

    Args:
        root: The server's root URL.
        path: The path under `root` the events are posted to.
        field: The form field holding the JSON (form posts only).
        headers: Extra HTTP headers, a dict.
        send_as_json: Post the JSON itself as the body.
        timeout: Seconds to wait for the server (Keras waits indefinitely).
    """

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False, timeout=10.0):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json, self.timeout = headers, send_as_json, timeout

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for key, value in (logs or {}).items():
            send[key] = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
        if self.send_as_json:
            body, content_type = json.dumps(send).encode(), "application/json"
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            content_type = "application/x-www-form-urlencoded"
        request = urllib.request.Request(
            self.root + self.path, data=body, method="POST",
            headers={"Content-Type": content_type, **(self.headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout):
                pass
        except urllib.error.HTTPError:
            pass   # the server answered (an error status): as Keras, not a warning
        except (urllib.error.URLError, OSError):
            warnings.warn(f"Could not reach RemoteMonitor root server at {self.root}",
                          stacklevel=2)
