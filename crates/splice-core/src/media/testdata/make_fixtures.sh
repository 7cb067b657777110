#!/bin/sh
# Regenerates the media fixtures (run once; the outputs are committed, tests never need these
# tools). Made on Debian 12 with ffmpeg 5.1 and LAME 3.100:
#   apt-get install ffmpeg lame
# The source is 1 s of a 440 Hz sine at amplitude 0.5 (-6 dBFS), 44.1 kHz mono, 16-bit
# (LAME resamples it to 32 kHz for 48 kbit/s).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import math, struct, sys, wave
def sine(path, freq, channels, rate=44100, amp=0.5):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels); w.setsampwidth(2); w.setframerate(rate)
        w.writeframes(b"".join(struct.pack("<h", round(amp * 32767 * math.sin(2 * math.pi * freq * i / rate))) * channels for i in range(rate)))
sine(sys.argv[1] + "/sine.wav", 440.0, 1)
sine(sys.argv[1] + "/stereo440.wav", 440.0, 2)
sine(sys.argv[1] + "/mono1k.wav", 1000.0, 1)
PY
lame --quiet -b 48 "$tmp/sine.wav" sine440.mp3
ffmpeg -loglevel error -y -i "$tmp/sine.wav" -c:a flac sine440.flac
ffmpeg -loglevel error -y -i "$tmp/sine.wav" -c:a libvorbis -q:a 0 sine440.ogg
ffmpeg -loglevel error -y -i "$tmp/sine.wav" -c:a aac -b:a 48k sine440.m4a
# Two audio tracks in one M4A: 440 Hz stereo, and 1 kHz mono, both at 0.5.
ffmpeg -loglevel error -y -i "$tmp/stereo440.wav" -i "$tmp/mono1k.wav" -map 0 -map 1 \
  -c:a aac -b:a 48k two_tracks.m4a
# A tiny H.264 video track (16x16, 2 fps) beside the same audio, for probe's hasVideo.
ffmpeg -loglevel error -y -f lavfi -i color=c=gray:s=16x16:r=2:d=1 -i "$tmp/sine.wav" \
  -c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac -b:a 32k -shortest -map_metadata -1 video16.mp4
