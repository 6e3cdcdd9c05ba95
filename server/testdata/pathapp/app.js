// A plain node:http app for the gateway tests: it routes on the path as
// the WHATWG URL parser reads it, percent-decoded and normalised, the way
// many Node apps do. /checkout/static/ is its static files, the rest of
// /checkout/ its checkout handler, which counts the requests that reached
// it without the gateway's visitor header (GET /__hits).
const http = require('node:http');
const path = require('node:path');

let hits = 0;
http.createServer((req, res) => {
  let p;
  try {
    p = path.posix.normalize(decodeURIComponent(new URL(req.url, 'http://app').pathname));
  } catch {
    res.writeHead(400).end('bad path');
    return;
  }
  let body;
  if (p === '/__hits') {
    body = String(hits);
  } else if (p.startsWith('/checkout/static/')) {
    body = 'static ' + p;
  } else if (p === '/checkout' || p.startsWith('/checkout/')) {
    const v = req.headers['x-waitroom-visitor'] || '';
    if (v === '') hits++;
    body = `checkout-handler ${p} visitor=${v}`;
  } else {
    body = 'page ' + p;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain' }).end(body);
}).listen(Number(process.argv[2]), '127.0.0.1');
