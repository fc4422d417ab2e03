# The engine service's console WebSocket (plain.kubevirt.io, as virtctl console uses it): connects with the
# bearer token and the service's CA, reads until the marker, types a line and waits for its echo.
import asyncio, ssl, sys, websockets
url, ca, token, marker = sys.argv[1:5]
async def main():
    ctx = ssl.create_default_context(cafile=ca) if url.startswith("wss") else None
    async with websockets.connect(url, ssl=ctx, subprotocols=["plain.kubevirt.io"],
                                  extra_headers={"Authorization": "Bearer " + token}, max_size=None) as ws:
        assert ws.subprotocol == "plain.kubevirt.io", ws.subprotocol
        seen = b""
        async def until(what):
            nonlocal seen
            while what not in seen:
                seen += await asyncio.wait_for(ws.recv(), 90)
        await until(marker.encode())
        seen = b""
        await ws.send(b"echo kvcon-ws-$((6*7))\n")
        await until(b"kvcon-ws-42")
        print("console ok")
asyncio.run(main())
