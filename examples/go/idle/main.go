// A mostly idle VU: GET ${BASE_URL}/, check the status, sleep one second.
// Many of these measure what a Go VU costs while it waits (its instance
// with the Go runtime and heap, its connection): the Go per-VU figures in
// docs/BENCHMARKS.md come from it. Same as examples/rust/idle, without the
// list of servers.
//
//	go run wload/sdk/cmd/wload-go build -o idle.wasm .
//	wload run idle.wasm --vus 100 --duration 10s -e BASE_URL=http://127.0.0.1:8080
package main

import (
	"strings"
	"time"

	"wload/sdk/wload"
)

type idle struct{}

func (idle) Iteration(string) error {
	res := wload.Get(strings.TrimRight(wload.Env("BASE_URL", "http://127.0.0.1:8080"), "/") + "/").Send()
	wload.Check("status is 200", res.Status() == 200)
	wload.Sleep(time.Second)
	return nil
}

func init() { wload.Register(idle{}) }

// main is required by the toolchains; the engine calls the exports.
func main() {}
