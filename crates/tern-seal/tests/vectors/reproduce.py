# Reproduces the known-answer values of tests/api/known_answers.rs from the
# format description alone (SECURITY.md §3.1, §3.3). Needs `cryptography`.
# Independent re-derivation of the tern-seal known-answer tokens.
import base64, hashlib, struct
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives import hashes

def rotl(v, c): return ((v << c) & 0xffffffff) | (v >> (32 - c))
def qr(s, a, b, c, d):
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],16)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],12)
    s[a]=(s[a]+s[b])&0xffffffff; s[d]=rotl(s[d]^s[a],8)
    s[c]=(s[c]+s[d])&0xffffffff; s[b]=rotl(s[b]^s[c],7)
def hchacha20(key, n16):
    s = [0x61707865,0x3320646e,0x79622d32,0x6b206574] + list(struct.unpack('<8I', key)) + list(struct.unpack('<4I', n16))
    for _ in range(10):
        qr(s,0,4,8,12); qr(s,1,5,9,13); qr(s,2,6,10,14); qr(s,3,7,11,15)
        qr(s,0,5,10,15); qr(s,1,6,11,12); qr(s,2,7,8,13); qr(s,3,4,9,14)
    return struct.pack('<8I', *(s[0:4] + s[12:16]))
def xchacha_encrypt(key, nonce24, pt, aad):
    sub = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(sub).encrypt(b'\0\0\0\0' + nonce24[16:], pt, aad)
def varint(n):
    out = b''
    while True:
        b = n & 0x7f; n >>= 7
        if n: out += bytes([b | 0x80])
        else: return out + bytes([b])
def lp(b): return struct.pack('>Q', len(b)) + b
def binding(parts):
    h = hashlib.sha256(lp(b'tern-seal/binding/v1'))
    for p in parts: h.update(lp(p))
    return h.digest()
def token(secret, kid, nonce, rid, iat, exp, parts, note, rnd):
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b'mcp-mrtr',
               info=b'requestState/v1' + b'\x01' + struct.pack('>I', kid)).derive(secret)
    header = b'\x01' + struct.pack('>I', kid)
    pt = varint(iat) + varint(exp) + binding(parts) + varint(len(note)) + note + bytes([rnd])
    aad = b'mcp-mrtr-state\0' + rid + b'\0' + header
    raw = header + nonce + xchacha_encrypt(key, nonce, pt, aad)
    return base64.urlsafe_b64encode(raw).rstrip(b'=').decode()

# RFC draft-irtf-cfrg-xchacha test vector for HChaCha20 (section 2.2.1).
k = bytes(range(32)); n = bytes.fromhex('000000090000004a0000000031415927')
assert hchacha20(k, n).hex() == '82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc'
print(token(bytes(range(32)), 1, bytes(24), b'https://mcp.example.com', 1800000000, 1800000600, [b'anonymous'], b'hello', 1))
print(token(bytes.fromhex('f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff'), 0xdeadbeef, bytes(range(24)), b'stdio:deployment-7', 0, 3600, [b'stdio', b'instance', b'1000', b''], b'', 255))
def consume_flow(fid, label):
    return hashlib.sha256(lp(b'tern-seal/consume/flow/v1') + lp(fid) + lp(label)).hexdigest()
def consume_business(ns, key):
    return hashlib.sha256(lp(b'tern-seal/consume/business/v1') + lp(ns) + lp(key)).hexdigest()
print(binding([b'anonymous']).hex())
print(consume_flow(bytes(range(16)), b'commit'))
print(consume_business(b'coupon', b'SPRING-2026'))
print(hashlib.sha256(b'{"arguments":{"amount":125,"to":"bob"},"m":1,"name":"pay"}').hexdigest())
