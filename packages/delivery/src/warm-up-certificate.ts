/**
 * The key and self-signed certificate of the worker's warm-up receiver (warm-up-attempts.ts), for
 * `warm-up.invalid` (a name that resolves nowhere: RFC 6761), valid until 2126; a server's
 * certificate only (CA:FALSE, digital signature, server auth), so it can sign no other. Public on
 * purpose: the warm-up's attempts trust it for their own target only (a target with its own CA
 * gets transport pools of its own, never shared), that target is made in the warm-up's code and
 * dials its receiver on loopback, and both are closed before the worker is ready. No endpoint can
 * name it: an endpoint's URL is vetted by the guard, and its CA comes only from a
 * `webhooks:listen` allowance (never in production).
 */
export const WARM_UP_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmS1XN7u1Z5/GgHjl
8C4orcnWj+pw1iGTj/YJOfCkJjShRANCAAQNdWJ22MUOXds1MfkPjikUexBPjewK
kZDPT12Rb0shVzDWxWMmBikMVNlOgDGbQjg/A97Y33IEaYx2AWs/oBYV
-----END PRIVATE KEY-----
`;

export const WARM_UP_CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIByzCCAXGgAwIBAgIUU/8pE5aN1q8at1ILO89c4Jrk3RswCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPd2FybS11cC5pbnZhbGlkMCAXDTI2MTEyNzA1MDUzNFoYDzIx
MjYxMTAzMDUwNTM0WjAaMRgwFgYDVQQDDA93YXJtLXVwLmludmFsaWQwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQNdWJ22MUOXds1MfkPjikUexBPjewKkZDPT12R
b0shVzDWxWMmBikMVNlOgDGbQjg/A97Y33IEaYx2AWs/oBYVo4GSMIGPMB0GA1Ud
DgQWBBQXnqLL8KS+LdgumqWRDYd+3YhWEzAfBgNVHSMEGDAWgBQXnqLL8KS+Ldgu
mqWRDYd+3YhWEzAaBgNVHREEEzARgg93YXJtLXVwLmludmFsaWQwDAYDVR0TAQH/
BAIwADAOBgNVHQ8BAf8EBAMCB4AwEwYDVR0lBAwwCgYIKwYBBQUHAwEwCgYIKoZI
zj0EAwIDSAAwRQIgdEtNVsC9Lnt+wp/9YQIbIBzr2+XLahHTby60u7xA+H4CIQDg
BQ6Tuegd706bqfqktveOUoRwKC/XCNvbyFJAjnZXWg==
-----END CERTIFICATE-----
`;
