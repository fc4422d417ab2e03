#!/usr/bin/env python3
"""Compares two images pixel by pixel (PNG as kvcon writes it: 8-bit RGB, or PPM P6 as QEMU's screendump writes
it). Prints the size and the number of differing pixels; exit 0 when equal, 1 when not, 2 on a bad file.
Standard library only."""
import struct
import sys
import zlib


def read_png(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        typ, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if zlib.crc32(typ + body) & 0xffffffff != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError("bad CRC in " + typ.decode())
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, ctype, interlace) != (8, 2, 0):
                raise ValueError("only 8-bit RGB non-interlaced PNG")
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw, row, out = zlib.decompress(idat), w * 3 + 1, bytearray()
    for y in range(h):
        line = raw[y * row:(y + 1) * row]
        if line[0] != 0:
            raise ValueError("unsupported PNG filter")
        out += line[1:]
    return w, h, bytes(out)


def read_ppm(data):
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P6" or fields[3] != b"255":
        raise ValueError("only binary PPM (P6, maxval 255)")
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos + 1:pos + 1 + w * h * 3]


def load(path):
    data = open(path, "rb").read()
    return read_png(data) if data[:4] == b"\x89PNG" else read_ppm(data)


def main():
    try:
        a, b = load(sys.argv[1]), load(sys.argv[2])
    except (OSError, ValueError, IndexError, zlib.error) as e:
        print("imgcmp: %s" % e)
        return 2
    if a[:2] != b[:2]:
        print("size differs: %dx%d vs %dx%d" % (a[0], a[1], b[0], b[1]))
        return 1
    diff = sum(1 for i in range(0, len(a[2]), 3) if a[2][i:i + 3] != b[2][i:i + 3])
    lit = sum(1 for i in range(0, len(a[2]), 3) if a[2][i:i + 3] != b"\0\0\0")
    print("%dx%d, %d pixels differ, %d non-black pixels" % (a[0], a[1], diff, lit))
    return 0 if diff == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
