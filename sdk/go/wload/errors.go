// The kinds of request failure of wload:test/http@0.2.0 (`error-kind`),
// with k6's error code of each, which Response.ErrorCode gives.

package wload

// ErrorKind is why a request failed: the WIT's error-kind, case for case
// and in its order (the canonical ABI passes the case's index).
type ErrorKind uint8

const (
	ErrGeneric ErrorKind = iota
	ErrInvalidURL
	ErrTimeout
	ErrBodyTooLarge
	ErrInterrupted
	ErrDNS
	ErrNoIP
	ErrBlockedIP
	ErrBlockedHostname
	ErrTCP
	ErrBrokenPipe
	ErrDial
	ErrDialTimeout
	ErrConnectionRefused
	ErrConnectionReset
	ErrTLS
	ErrTLSUnknownAuthority
	ErrTLSHostname
	ErrHTTP2
	ErrHTTP2GoAway
	ErrHTTP2Stream
	ErrHTTP2Connection
	ErrDecompression
	ErrDecodedTooLarge
)

// errorKinds are the WIT's names and k6's codes, index for index.
var errorKinds = [...]struct {
	name string
	code uint32
}{
	{"generic", 1000},
	{"invalid-url", 1020},
	{"timeout", 1050},
	{"body-too-large", 1060},
	{"interrupted", 1070},
	{"dns", 1100},
	{"no-ip", 1101},
	{"blocked-ip", 1110},
	{"blocked-hostname", 1111},
	{"tcp", 1200},
	{"broken-pipe", 1201},
	{"dial", 1210},
	{"dial-timeout", 1211},
	{"connection-refused", 1212},
	{"connection-reset", 1220},
	{"tls", 1300},
	{"tls-unknown-authority", 1310},
	{"tls-hostname", 1311},
	{"http2", 1600},
	{"http2-goaway", 1610},
	{"http2-stream", 1630},
	{"http2-connection", 1650},
	{"decompression", 1701},
	{"decoded-too-large", 1702},
}

// Code is k6's error code of this kind (res.error_code in k6).
func (k ErrorKind) Code() uint32 {
	if int(k) < len(errorKinds) {
		return errorKinds[k].code
	}
	return 1000
}

// String is the kind's name in the WIT (`connection-refused`).
func (k ErrorKind) String() string {
	if int(k) < len(errorKinds) {
		return errorKinds[k].name
	}
	return "generic"
}
