# A plain http.server app for the gateway tests: it routes on the path
# percent-decoded and normalised (urllib, posixpath), the way many Python
# apps do. /checkout/static/ is its static files, the rest of /checkout/ its
# checkout handler, which counts the requests that reached it without the
# gateway's visitor header (GET /__hits).
import posixpath
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

hits = 0


class App(BaseHTTPRequestHandler):
    def route(self):
        global hits
        p = posixpath.normpath(unquote(urlsplit(self.path).path))
        if p == "/__hits":
            body = str(hits)
        elif p.startswith("/checkout/static/"):
            body = "static " + p
        elif p == "/checkout" or p.startswith("/checkout/"):
            v = self.headers.get("X-Waitroom-Visitor", "")
            if v == "":
                hits += 1
            body = "checkout-handler %s visitor=%s" % (p, v)
        else:
            body = "page " + p
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_HEAD = route

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
