// Several entry points for several scenarios, as examples/rust/scenarios:
// the default browses, `api` posts JSON to /echo. Each check names the
// scenario the VU runs in, so the summary shows which scenario ran which
// function; the engine picks the function by its index in Functions()
// (after "default").
//
//	go run wload/sdk/cmd/wload-go build -o scenarios.wasm .
//	wload run scenarios.wasm --config two-scenarios.json -e BASE_URL=http://127.0.0.1:8080
//
// with scenarios choosing `"exec": "api"` or the default.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"wload/sdk/wload"
)

type scenarios struct{}

func base() string {
	return strings.TrimRight(wload.Env("BASE_URL", "http://127.0.0.1:8080"), "/")
}

func (scenarios) Options() string { return `{"vus": 2, "iterations": 4}` }

func (scenarios) Functions() []string { return []string{"api"} }

func (s scenarios) Exec(name, data string) error {
	switch name {
	case "api":
		return s.api()
	default:
		return fmt.Errorf("no entry point %q", name)
	}
}

func (scenarios) Iteration(string) error {
	res := wload.Get(base() + "/").Send()
	wload.Check(wload.Scenario()+" ran default", res.Status() == 200)
	return nil
}

func (scenarios) api() error {
	body, err := json.Marshal(map[string]uint32{"vu": wload.VU()})
	if err != nil {
		return err
	}
	res := wload.Post(base() + "/echo").JSON(string(body)).Send()
	var echoed struct{ VU uint32 }
	ok := res.Status() == 200 && res.JSON(&echoed) == nil && echoed.VU == wload.VU()
	wload.Check(wload.Scenario()+" ran api", ok)
	// Scenario env overrides -e variables.
	wload.Check(wload.Scenario()+" sees ORIGIN="+wload.Env("ORIGIN", "-e"), true)
	return nil
}

func init() { wload.Register(scenarios{}) }

// main is required by the toolchains; the engine calls the exports.
func main() {}
