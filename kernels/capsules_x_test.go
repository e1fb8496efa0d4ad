package kernels

import ("testing"; "fmt"; "runtime"; "syscall"; "time"; "unsafe")

func capsXCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func capsXTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f()
	best := time.Duration(1 << 62)
	for r := 0; r < 5; r++ {
		t0 := capsXCPU()
		f()
		best = min(best, capsXCPU()-t0)
	}
	return best
}

func TestCapsXDW(t *testing.T) {
	defer Use(Impl())
	defer func(c int) { votesBGroup = c }(votesBGroup)
	for _, s := range capsBenchShapes {
	d := newCapsBenchData(s.sh, s.dIn)
	for _, impl := range []string{"ref", "avx512"} {
	Use(impl)
		for _, g := range []int{2, 4, 8, 16, 1<<30} {
				votesBGroup = g
				dw := capsXTime(func() { VotesBackward(d.vs, d.dw, nil, d.w, d.u, d.duhat) })
				du := capsXTime(func() { VotesBackward(d.vs, nil, d.du, d.w, d.u, d.duhat) })
				fmt.Printf("%s %s group %d: dw %.1f du %.1f GFLOP/s\n", s.name, impl, g, votesFlops(d.vs)/dw.Seconds()/1e9, votesFlops(d.vs)/du.Seconds()/1e9)
		}
	}
	}
}
