// A test that misbehaves on purpose, to show (and test) what wload does
// when a Go test goes wrong. -e FAULT= picks the behaviour, as in
// examples/rust/faults:
//
//   - panic: panic every third iteration; the engine reports the panic's
//     message, the VU continues with a fresh instance.
//   - error: return an error every other iteration.
//   - memory: allocate until the --vu-memory limit stops the VU.
//   - setup: fail in setup, which aborts the run.
//   - stale: keep a response past its iteration; the next iteration's use
//     of it panics with the SDK's message.
//   - garbage: 8 MiB of garbage per iteration between 2,048 header reads,
//     so that the Go runtime collects often, also while the engine hands
//     a header over (where a collection must not start: it would read the
//     clock through WASI, which the component model forbids there, and
//     the instance would trap).
//   - big: results larger than the SDK's 32 KiB scratch buffer (setup
//     data of 128 KiB, -e BIG= of ${BIG_LEN} bytes, 40 KiB of set-cookie
//     fields), read 64 times per iteration between allocations of 256
//     KiB of garbage; they arrive whole and the instance does not trap.
//
// Setup returns {"token": "t0k3n"}; every iteration checks that it
// arrived, and teardown logs it. Every mode first sends GET ${BASE_URL}/.
//
//	go run wload/sdk/cmd/wload-go build -o faults.wasm .
//	wload run faults.wasm --vus 1 --iterations 9 -e FAULT=panic
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"wload/sdk/wload"
)

type faults struct {
	hoard [][]byte
	sink  []byte
	kept  *wload.Response
}

type setupData struct {
	Token string `json:"token"`
}

func (f *faults) Setup() (string, error) {
	if wload.Env("FAULT", "") == "setup" {
		return "", errors.New("setup refused on purpose")
	}
	if wload.Env("FAULT", "") == "big" {
		return `{"token":"t0k3n","pad":"` + strings.Repeat("p", 128<<10) + `"}`, nil
	}
	return `{"token":"t0k3n"}`, nil
}

func (f *faults) Teardown(data string) error {
	var d setupData
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		return err
	}
	wload.Log(wload.Info, "teardown saw token "+d.Token)
	return nil
}

func (f *faults) Iteration(data string) error {
	base := strings.TrimRight(wload.Env("BASE_URL", "http://127.0.0.1:8080"), "/")
	res := wload.Get(base + "/").Send()
	n := wload.Iteration()
	switch wload.Env("FAULT", "") {
	case "panic":
		if n%3 == 2 {
			panic(fmt.Sprintf("deliberate panic in iteration %d", n))
		}
	case "error":
		if n%2 == 1 {
			return fmt.Errorf("deliberate error in iteration %d", n)
		}
	case "memory":
		for {
			f.hoard = append(f.hoard, make([]byte, 1<<20))
		}
	case "garbage":
		read := true
		for i := 0; i < 2048; i++ {
			f.sink = make([]byte, 4<<10)
			_, ok := res.Header("content-length")
			read = read && ok
		}
		wload.Check("garbage: headers read", read)
	case "big":
		value := strings.Repeat("v", 2<<10)
		var q []string
		for i := range 20 {
			q = append(q, fmt.Sprintf("c%d=%s", i, value))
		}
		cookies := wload.Get(base + "/cookies/set?" + strings.Join(q, "&")).MaxRedirects(0).Send()
		want, _ := strconv.Atoi(wload.Env("BIG_LEN", "0"))
		whole := true
		for range 64 {
			f.sink = make([]byte, 256<<10)
			set := 0
			for _, h := range cookies.Headers() {
				if h[0] == "set-cookie" && strings.HasSuffix(h[1], "="+value+"; Path=/") {
					set++
				}
			}
			data, _ := wload.SetupData()
			whole = whole && set == 20 && len(wload.Env("BIG", "")) == want && len(data) > 128<<10
		}
		wload.Check("big: results whole", whole)
	case "stale":
		if f.kept != nil {
			f.kept.Status()
		}
		f.kept = res
	}
	var d setupData
	wload.Check("setup data arrived", json.Unmarshal([]byte(data), &d) == nil && d.Token == "t0k3n")
	wload.Check("status is 200", res.Status() == 200)
	return nil
}

func init() { wload.Register(&faults{}) }

// main is required by the toolchains; the engine calls the exports.
func main() {}
