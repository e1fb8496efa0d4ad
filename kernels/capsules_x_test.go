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

func TestCapsXRouting(t *testing.T) {
	defer Use(Impl())
	defer func(v int) { routingBlockBytes = v }(routingBlockBytes)
	Use("avx512")
	for _, s := range capsBenchShapes[:1] {
	d := newCapsBenchData(s.sh, s.dIn)
	sh := s.sh
	for rep := 0; rep < 2; rep++ {
	for _, kb := range []int{16, 32, 64, 128, 256, 1 << 16} {
		routingWholeBytes, routingBlockBytes = 0, kb << 10
		f := capsXTime(func() { RoutingForward(sh, d.v, d.c, d.uhat, d.prior, d.wk) })
		bw := capsXTime(func() { RoutingBackward(sh, d.duhat, d.dprior, d.dv, d.uhat, d.prior, d.wk) })
		fmt.Printf("%s block %dKB (nb %d) fwd %.2f bwd %.2f GFLOP/s (cpu time)\n", s.name, kb, routingChunk(sh), routingFlops(sh, false)/f.Seconds()/1e9, routingFlops(sh, true)/bw.Seconds()/1e9)
	}
	}
	}
}

func TestCapsXPrims(t *testing.T) {
	for _, impl := range []string{"ref", "avx2", "avx512"} {
		o := tables[impl]
		for _, n := range []int{16, 96, 1152} {
			m := 16
			a := make([]float32, m*n)
			for i := range a { a[i] = float32(i%7) * 0.01 }
			x := make([]float32, n)
			y := make([]float32, n)
			xm := make([]float32, m)
			reps := 1000000 / n
			fl := float64(2*m*n*reps) / 1e9
			tn := capsXTime(func() { for r := 0; r < reps; r++ { o.gemvN(m, n, a, n, x, xm) } })
			tt := capsXTime(func() { for r := 0; r < reps; r++ { o.gemvT(m, n, a, n, xm, y) } })
			tg := capsXTime(func() { for r := 0; r < reps; r++ { o.ger(m, n, xm, x, a, n) } })
			tm := capsXTime(func() { for r := 0; r < reps; r++ { o.mulAddRows(m, n, a, n, a, n, y) } })
			fmt.Printf("%s m=%d n=%d gemvN %.1f gemvT %.1f ger %.1f mulAddRows %.1f GFLOP/s\n", impl, m, n, fl/tn.Seconds(), fl/tt.Seconds(), fl/tg.Seconds(), fl/tm.Seconds())
		}
	}
}
