// Command wload-go builds a Go load test into a module that wload runs:
//
//	go run wload/sdk/cmd/wload-go build [-o test.wasm] [package]
//
// runs `go build` for GOOS=wasip1 GOARCH=wasm with -buildmode=c-shared (a
// reactor: the engine calls the exports, there is no main loop), then
// appends the world's metadata (a `component-type` custom section, as
// wit-bindgen does). wload turns such a module into a component when it
// loads it, linking the WASI preview 1 adapter in front of it, so no other
// tool is needed.
//
//	go run wload/sdk/cmd/wload-go embed core.wasm [-o test.wasm]
//
// appends the metadata to a module built some other way (TinyGo:
// `tinygo build -target=wasip1 -buildmode=c-shared -o core.wasm .`).
package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The world wload:test, encoded by wit-component; the engine's test suite
// checks that it matches wit/ (WLOAD_BLESS=1 rewrites it).
//
//go:embed component-type.wasm
var metadata []byte

const section = "component-type:wload:test"

func usage() {
	fmt.Fprintln(os.Stderr, "usage: wload-go build [-o test.wasm] [package]")
	fmt.Fprintln(os.Stderr, "       wload-go embed core.wasm [-o test.wasm]")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	// -o may come before or after the one positional argument.
	var arg, out string
	for rest := os.Args[2:]; len(rest) > 0; rest = rest[1:] {
		switch {
		case rest[0] == "-o" || rest[0] == "--output":
			if len(rest) < 2 {
				usage()
			}
			out, rest = rest[1], rest[1:]
		case strings.HasPrefix(rest[0], "-") || arg != "":
			usage()
		default:
			arg = rest[0]
		}
	}
	var err error
	switch os.Args[1] {
	case "build":
		if arg == "" {
			arg = "."
		}
		err = build(arg, out)
	case "embed":
		if arg == "" {
			usage()
		}
		if out == "" {
			out = arg
		}
		err = embed(arg, out)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wload-go:", err)
		os.Exit(1)
	}
}

func build(pkg, out string) error {
	if out == "" {
		dir, err := filepath.Abs(pkg)
		if err != nil {
			return err
		}
		out = filepath.Base(dir) + ".wasm"
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".wload-go-*.wasm")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	// No version control stamp: the engine never reads it, and stamping
	// runs git, which refuses a checkout that another user owns.
	cmd := exec.Command(goCmd, "build", "-buildmode=c-shared", "-buildvcs=false", "-o", tmp.Name(), pkg)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return embed(tmp.Name(), out)
}

func embed(core, out string) error {
	module, err := os.ReadFile(core)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(module, []byte("\x00asm\x01\x00\x00\x00")) {
		return errors.New(core + " is not a core WebAssembly module")
	}
	if bytes.Contains(module, []byte(section)) {
		return errors.New(core + " already carries the world's metadata")
	}
	var body []byte
	body = appendLEB(body, uint32(len(section)))
	body = append(body, section...)
	body = append(body, metadata...)
	module = append(module, 0)
	module = appendLEB(module, uint32(len(body)))
	module = append(module, body...)
	if err := os.WriteFile(out, module, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wload-go: wrote %s (%d bytes)\n", out, len(module))
	return nil
}

func appendLEB(b []byte, n uint32) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
