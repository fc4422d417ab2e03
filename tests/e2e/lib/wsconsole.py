# The engine service's console WebSocket (plain.kubevirt.io, as virtctl console uses it): connects with the
# bearer token and the service's CA, types a command (again every 2 s: the guest may still be booting) and waits
# for its output, which only the guest's shell can have produced ($((6*7)) evaluated).
import asyncio, ssl, sys, websockets
url, ca, token = sys.argv[1:4]


async def main():
    ctx = ssl.create_default_context(cafile=ca) if url.startswith("wss") else None
    async with websockets.connect(url, ssl=ctx, subprotocols=["plain.kubevirt.io"],
                                  extra_headers={"Authorization": "Bearer " + token}, max_size=None) as ws:
        assert ws.subprotocol == "plain.kubevirt.io", ws.subprotocol
        seen = b""
        loop = asyncio.get_running_loop()
        until = loop.time() + 90
        while b"kvcon-ws-42" not in seen:
            if loop.time() > until:
                sys.exit("no answer from the guest's shell; seen: %r" % seen[-300:])
            await ws.send(b"echo kvcon-ws-$((6*7))\n")
            try:
                while b"kvcon-ws-42" not in seen:
                    seen += await asyncio.wait_for(ws.recv(), 2)
            except asyncio.TimeoutError:
                pass
        print("console ok")


asyncio.run(main())
