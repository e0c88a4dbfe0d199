// The smallest useful wload test: GET ${BASE_URL}/, check the status, and
// count the bytes received in a custom metric. No sleep: each VU sends
// requests back to back. Same as examples/rust/hello.
//
//	go run wload/sdk/cmd/wload-go build -o hello.wasm .
//	wload run hello.wasm --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080
package main

import (
	"strings"

	"wload/sdk/wload"
)

type hello struct {
	bodyBytes *wload.Counter
}

func (h *hello) Iteration(string) error {
	base := strings.TrimRight(wload.Env("BASE_URL", "http://127.0.0.1:8080"), "/")
	res := wload.Get(base + "/").Send()
	wload.Check("status is 200", res.Status() == 200)
	h.bodyBytes.Add(float64(res.BodyLen()))
	return nil
}

func init() {
	wload.Register(&hello{bodyBytes: wload.NewCounter("body_bytes")})
}

// main is required by the toolchains; the engine calls the exports.
func main() {}
