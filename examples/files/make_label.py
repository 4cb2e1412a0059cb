"""Draws tasks/label.png: a shipping label whose code the image task asks for, in a 5x7 pixel
font, as a grayscale PNG written with zlib alone (no imaging library), so the bytes are the same
wherever it runs. Run from examples/files: python3 make_label.py"""

import struct
import zlib

TEXT = "SHIP-4471"
FONT = {
    "S": ["01111", "10000", "10000", "01110", "00001", "00001", "11110"],
    "H": ["10001", "10001", "10001", "11111", "10001", "10001", "10001"],
    "I": ["01110", "00100", "00100", "00100", "00100", "00100", "01110"],
    "P": ["11110", "10001", "10001", "11110", "10000", "10000", "10000"],
    "-": ["00000", "00000", "00000", "11111", "00000", "00000", "00000"],
    "4": ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
    "7": ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
    "1": ["00100", "01100", "00100", "00100", "00100", "00100", "01110"],
}
SCALE, MARGIN = 4, 8

width = MARGIN * 2 + len(TEXT) * 6 * SCALE
height = MARGIN * 2 + 7 * SCALE
pixels = [[255] * width for _ in range(height)]
for index, char in enumerate(TEXT):
    for row, bits in enumerate(FONT[char]):
        for column, bit in enumerate(bits):
            if bit == "1":
                for dy in range(SCALE):
                    for dx in range(SCALE):
                        y = MARGIN + row * SCALE + dy
                        x = MARGIN + (index * 6 + column) * SCALE + dx
                        pixels[y][x] = 0


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


raw = b"".join(b"\x00" + bytes(row) for row in pixels)
png = (
    b"\x89PNG\r\n\x1a\n"
    + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    + chunk(b"IDAT", zlib.compress(raw, 9))
    + chunk(b"IEND", b"")
)
with open("tasks/label.png", "wb") as out:
    out.write(png)
