package kernels

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// forEachImpl is the one per-implementation harness of the package's tests
// and benchmarks: it runs f as the subtest (or sub-benchmark) "impl=name"
// for every available implementation, with that implementation selected
// by Use, and restores the implementation in use before it afterwards.
func forEachImpl[T interface {
	testing.TB
	Run(name string, f func(T)) bool
}](t T, f func(t T, impl string)) {
	t.Helper()
	prev := Impl()
	defer func() {
		if err := Use(prev); err != nil {
			t.Fatal(err)
		}
	}()
	for _, name := range Available() {
		t.Run("impl="+name, func(t T) {
			if err := Use(name); err != nil {
				t.Fatal(err)
			}
			f(t, name)
		})
	}
}

// TestDispatchChoosesBest checks the default is the best implementation
// this CPU and build have: the last of Available (which lists ref first).
func TestDispatchChoosesBest(t *testing.T) {
	av := Available()
	if len(av) == 0 || av[0] != "ref" {
		t.Fatalf("Available() = %v, want ref first", av)
	}
	if os.Getenv(EnvVar) == "" {
		// implDefs lists implementations in order of preference, so the
		// best available one is the last.
		if best := av[len(av)-1]; Impl() != best {
			t.Errorf("Impl() = %s with %v available, want %s", Impl(), av, best)
		}
	}
}

func TestUseUnknown(t *testing.T) {
	prev := Impl()
	defer Use(prev)
	err := Use("sse9")
	if err == nil || !strings.Contains(err.Error(), "sse9") || !strings.Contains(err.Error(), "ref") {
		t.Errorf("Use(sse9): %v", err)
	}
	if Impl() != prev {
		t.Errorf("a failed Use changed the implementation to %s", Impl())
	}
}

// TestEnvVarForcesImpl runs this test binary again with CAPSTAN_KERNELS set
// and checks what it picks (and its int8 path), including a bad value
// (reported, ignored).
func TestEnvVarForcesImpl(t *testing.T) {
	if os.Getenv("CAPSTAN_PRINT_IMPL") == "1" {
		os.Stdout.WriteString("impl=" + Impl() + "\n" + "i8=" + ImplI8() + "\n")
		return
	}
	if testing.Short() {
		t.Skip("spawns the test binary")
	}
	for _, want := range append(Available(), "bogus") {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvVarForcesImpl$")
		cmd.Env = append(os.Environ(), "CAPSTAN_PRINT_IMPL=1", EnvVar+"="+want)
		out, err := cmd.CombinedOutput()
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skip("cannot re-execute the test binary (running under an emulator without binfmt)")
		}
		if err != nil {
			t.Fatalf("%s=%s: %v\n%s", EnvVar, want, err, out)
		}
		s := string(out)
		if want == "bogus" {
			if best := Available()[len(Available())-1]; !strings.Contains(s, `"bogus"`) || !strings.Contains(s, "impl="+best+"\n") {
				t.Errorf("%s=bogus: output %q, want a warning and the default implementation", EnvVar, s)
			}
			continue
		}
		if !strings.Contains(s, "impl="+want+"\n") || !strings.Contains(s, "i8="+tables[want].i8Name+"\n") {
			t.Errorf("%s=%s: output %q, want impl=%s and i8=%s", EnvVar, want, s, want, tables[want].i8Name)
		}
	}
}
