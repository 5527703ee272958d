#!/usr/bin/env python3
"""Opens a local HTML page in headless Chromium through the DevTools protocol
(standard library only), takes a full-page screenshot and checks that it
rendered: every element named by --require has a box on the page whose pixels
in the screenshot are not blank, the console logged no error, no script threw,
and the page fetched nothing but itself (a self-contained report).

  browser_check.py PAGE.html --require timeline,kernels [--png OUT.png] [--width 1150]

Exit 0 when every check passes, 1 with one line per failure otherwise, 2 when
Chromium cannot be started. Flags per the machine notes: --headless
--no-sandbox --disable-gpu --disable-quic --no-first-run
--disable-background-networking --disable-component-update --disable-sync and
a fresh --user-data-dir."""
import argparse, base64, json, os, shutil, socket, struct, subprocess, sys, tempfile, time, urllib.request, zlib


class WS:
    """A minimal RFC 6455 client: text frames, masked, no extensions."""

    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.split(":")
        self.s = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(1)
            if not chunk:
                raise OSError("websocket handshake failed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError("websocket handshake refused: " + head.split(b"\r\n")[0].decode())

    def _read(self, n):
        b = bytearray()
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise OSError("websocket closed")
            b += c
        return bytes(b)

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                               if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.s.sendall(hdr + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(data)))

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data = self._read(n)
            op = b0 & 0x0F
            if op == 8:
                raise OSError("websocket closed by the browser")
            if op in (9, 10):
                continue
            msg += data
            if b0 & 0x80:
                return msg.decode()


class CDP:
    def __init__(self, ws):
        self.ws, self.id, self.events = ws, 0, []

    def call(self, method, **params):
        self.id += 1
        my = self.id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == my:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait(self, method, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError(method)


def png_pixels(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"PNG depth {depth} color type {ctype}"
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, [[tuple(r[x * bpp:x * bpp + 3]) for x in range(w)] for r in rows]


def region_ink(pix, box, W, H):
    """Fraction of pixels in box that differ from the box's most common color,
    and the number of distinct colors."""
    x0, y0 = max(0, int(box["x"])), max(0, int(box["y"]))
    x1, y1 = min(W, int(box["x"] + box["w"])), min(H, int(box["y"] + box["h"]))
    counts = {}
    for y in range(y0, y1, 2):
        row = pix[y]
        for x in range(x0, x1, 2):
            counts[row[x]] = counts.get(row[x], 0) + 1
    total = sum(counts.values())
    if not total:
        return 0.0, 0
    return 1 - max(counts.values()) / total, len(counts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--require", default="", help="comma-separated element ids that must render")
    ap.add_argument("--png", help="write the screenshot here")
    ap.add_argument("--width", type=int, default=1150)
    ap.add_argument("--max-height", type=int, default=6000)
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"))
    a = ap.parse_args()
    exe = shutil.which(a.chromium)
    if not exe:
        print(f"browser_check: {a.chromium} not found (make deps installs Debian's chromium)")
        return 2
    url = "file://" + os.path.abspath(a.page)
    ud = tempfile.mkdtemp(prefix="nxcc-chromium-")
    proc = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             "--hide-scrollbars", f"--user-data-dir={ud}", "--remote-debugging-port=0",
                             f"--window-size={a.width},900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fails = []
    try:
        port_file, end = os.path.join(ud, "DevToolsActivePort"), time.time() + 60
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if proc.poll() is not None or time.time() > end:
                print("browser_check: chromium did not start")
                return 2
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        page = next(t for t in targets if t.get("type") == "page")
        cdp = CDP(WS(page["webSocketDebuggerUrl"]))
        for dom in ("Page", "Runtime", "Log", "Network"):
            cdp.call(dom + ".enable")
        cdp.call("Emulation.setDeviceMetricsOverride", width=a.width, height=900, deviceScaleFactor=1, mobile=False)
        cdp.call("Page.navigate", url=url)
        cdp.wait("Page.loadEventFired")
        info = json.loads(cdp.call("Runtime.evaluate", returnByValue=True, expression=(
            "JSON.stringify({h: document.documentElement.scrollHeight, boxes: Object.fromEntries(%s.map(id => {"
            "const e = document.getElementById(id); if (!e) return [id, null];"
            "const r = e.getBoundingClientRect();"
            "return [id, {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}]; }))})"
            % json.dumps([i for i in a.require.split(",") if i])))["result"]["value"])
        H = min(int(info["h"]), a.max_height)
        cdp.call("Emulation.setDeviceMetricsOverride", width=a.width, height=H, deviceScaleFactor=1, mobile=False)
        shot = base64.b64decode(cdp.call("Page.captureScreenshot", format="png")["data"])
        if a.png:
            with open(a.png, "wb") as f:
                f.write(shot)
        W, Hs, pix = png_pixels(shot)
        ink_all, _ = region_ink(pix, {"x": 0, "y": 0, "w": W, "h": Hs}, W, Hs)
        if ink_all < 0.01:
            fails.append(f"the page is blank ({ink_all:.4f} of its pixels differ from the background)")
        for rid, box in info["boxes"].items():
            if box is None:
                fails.append(f"#{rid}: no such element")
                continue
            if box["w"] < 50 or box["h"] < 20:
                fails.append(f"#{rid}: box {box['w']:.0f}x{box['h']:.0f} px is too small to show anything")
                continue
            ink, colors = region_ink(pix, box, W, Hs)
            print(f"#{rid}: {box['w']:.0f}x{box['h']:.0f} px at ({box['x']:.0f},{box['y']:.0f}), "
                  f"{100 * ink:.1f}% ink, {colors} colors")
            if ink < 0.02 or colors < 3:
                fails.append(f"#{rid}: blank where it should be ({100 * ink:.2f}% of pixels drawn, {colors} colors)")
        for e in cdp.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                fails.append("script exception: " + p["exceptionDetails"].get("text", "?"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                fails.append("console error: " + " ".join(str(x.get("value", x.get("description", ""))) for x in p["args"]))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                fails.append("console error: " + p["entry"].get("text", ""))
            elif m == "Network.requestWillBeSent" and not p["request"]["url"].startswith(("file:", "data:", "about:")):
                fails.append("network fetch: " + p["request"]["url"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(ud, ignore_errors=True)
    for f in fails:
        print("FAIL:", f)
    print(f"browser_check: {os.path.basename(a.page)}: {'ok' if not fails else f'{len(fails)} problem(s)'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
