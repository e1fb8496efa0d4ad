// Command amd64i8 generates Capstan's amd64 int8 GEMM micro-kernels with
// avo: asm/i8_amd64.s and its //go:noescape stubs asm/i8_amd64.go. It is run
// by go generate in asm (see asm/gen_amd64i8.go):
//
//	go run -C _gen ./amd64i8 -out ../i8_amd64.s -stubs ../i8_amd64.go
//
// Every kernel adds to an mr×nr tile of an int32 C the exact products of mr
// rows of a row-major int8 A with packed int8 weights: the packed B of a
// block of 32 columns holds, for every group g of 4 consecutive k, the 32
// columns' 4 bytes one after the other (128 bytes per group: byte q of
// column j at g*128 + j*4 + q), k padded with zero bytes to a multiple of 4.
// The kc mod 4 last values of a row of A are not read from A: the caller
// passes them in tail (one little-endian uint32 per row, the missing bytes
// zero), so that no kernel reads past the end of a row.
//
// AVX512-VNNI (gemmI8VNNI{mr}, mr = 1…8, nr = 32): VPDPBUSD multiplies
// unsigned bytes by signed bytes, so A is offset by +128 (XOR 0x80 of each
// broadcast group of 4 bytes) and the accumulators start at
// corr[j] = −128·Σ_p B[j][p]: Σ (a+128)·b − 128·Σ b = Σ a·b. No intermediate
// saturates (VPDPBUSD sums four 255·128 products into int32).
//
// AVX2 (gemmI8AVX2{mr}, mr = 1…4, nr = 16, one half of a 32-column block):
// VPMADDUBSW also multiplies unsigned by signed bytes but saturates its
// pairwise int16 sums, and 2·255·128 = 65280 does not fit int16. So each
// signed a is split into 7 low bits and the sign bit, a = lo − 128·h with
// lo = a & 0x7F ∈ [0, 127] and h = a >> 7 & 1 ∈ {0, 1}: VPMADDUBSW(lo, b)
// sums pairs into at most 2·127·128 = 32512 in magnitude and VPMADDUBSW(h,
// b) into at most 256, both exact in int16; VPMADDWD by 1 and by −128
// widens them to int32 and adds the pairs. This needs no correction term.
//
// It also generates the requantization kernels requantRows{AVX512,AVX2}
// (see requant below): q[r·ld+c] = clamp(roundToEven(float32(acc[r·ld+c])·
// mul[c] + add[c]), lo, 127) for r < rows, c < n, 16 or 8 lanes per step.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
)

// Packed-B geometry, shared with asm/i8_amd64_checked.go and package kernels.
const (
	blockCols  = 32            // columns per packed block
	groupBytes = 4 * blockCols // bytes of one group of 4 k in a block
	maxRowsZ   = 8             // rows of the largest AVX512-VNNI kernel
	maxRowsY   = 4             // rows of the largest AVX2 kernel
)

var zregs = []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7,
	reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
	reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23,
	reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}

var yregs = []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
	reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15}

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

// rowAddr addresses row i (< 8) of A at byte offset disp: rows 0–3 from
// p0, rows 4–7 from p4 = p0 + 4·lda, with lda and lda3 = 3·lda as indexes.
func rowAddr(i int, p0, p4, lda, lda3 reg.Register, disp int) operand.Mem {
	base := p0
	if i >= 4 {
		base = p4
	}
	switch i % 4 {
	case 0:
		return operand.Mem{Base: base, Disp: disp}
	case 1:
		return operand.Mem{Base: base, Index: lda, Scale: 1, Disp: disp}
	case 2:
		return operand.Mem{Base: base, Index: lda, Scale: 2, Disp: disp}
	}
	return operand.Mem{Base: base, Index: lda3, Scale: 1, Disp: disp}
}

// vpdpbusd emits VPDPBUSD (AVX512-VNNI, which avo v0.5.0 lacks but the Go
// assembler has): acc += Σ_4 uint8(u)·int8(s) per int32 lane. Go operand
// order: signed source, unsigned source, destination.
func vpdpbusd(c *build.Context, s, u, acc reg.VecPhysical) {
	c.Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []operand.Op{s, u, acc}})
}

// broadcastConst sets v to the 32-bit constant k in every lane, through AX.
func broadcastConst(c *build.Context, k uint32, x reg.VecPhysical, v reg.VecPhysical) {
	c.MOVL(operand.U32(k), reg.EAX)
	c.MOVD(reg.EAX, x)
	c.VPBROADCASTD(x, v)
}

const signature = "func(kg int, a []int8, lda int, tail []uint32, b []int8, corr []int32, c []int32, ldc int)"

// prologue starts the body gemmI8{kind}{mr} of GemmI8Kernel{kind} for
// the ISA desc and loads the common arguments; it returns (p0, p4, lda,
// lda3, bp, cp, ldc, kg, tp, ntail).
func prologue(c *build.Context, kind, desc string, mr int) (p0, p4, lda, lda3, bp, cp, ldc, kg, tp, ntail reg.Register) {
	name := fmt.Sprintf("gemmI8%s%d", kind, mr)
	c.Function(name)
	c.Attributes(attr.NOSPLIT)
	c.SignatureExpr(signature)
	c.Pragma("noescape")
	c.Doc(fmt.Sprintf("%s is the %s body of GemmI8Kernel%s for %d rows: lengths are not checked.", name, desc, kind, mr))
	p0, p4, lda, lda3 = reg.RSI, reg.RDI, reg.RDX, reg.R8
	bp, cp, ldc, kg, tp, ntail = reg.RBX, reg.R9, reg.R10, reg.RCX, reg.R11, reg.R12
	c.Load(c.Param("kg"), kg)
	c.Load(c.Param("a").Base(), p0)
	c.Load(c.Param("lda"), lda)
	c.Load(c.Param("tail").Base(), tp)
	c.Load(c.Param("tail").Len(), ntail)
	c.Load(c.Param("b").Base(), bp)
	c.Load(c.Param("c").Base(), cp)
	c.Load(c.Param("ldc"), ldc)
	c.SHLQ(operand.U8(2), ldc)
	c.LEAQ(operand.Mem{Base: lda, Index: lda, Scale: 2}, lda3)
	if mr > 4 {
		c.LEAQ(operand.Mem{Base: p0, Index: lda, Scale: 4}, p4)
	}
	return
}

// vnni emits gemmI8VNNI{mr}: an mr×32 tile, accumulators Z0–Z15 (row i in
// Z2i, Z2i+1), B in Z16–Z17, the 0x80 bytes in Z18, A broadcasts in Z19–Z26.
func vnni(c *build.Context, mr int) {
	p0, p4, lda, lda3, bp, cp, ldc, kg, tp, ntail := prologue(c, "VNNI", "AVX512-VNNI", mr)
	acc := func(i, v int) reg.VecPhysical { return zregs[2*i+v] }
	b0, b1, x80 := zregs[16], zregs[17], zregs[18]
	bc := func(i int) reg.VecPhysical { return zregs[19+i] }
	corr := reg.RAX
	c.Load(c.Param("corr").Base(), corr)
	c.Comment("The accumulators start at corr = −128·Σ b: the +128 offset of A cancels.")
	c.VMOVDQU32(mem(corr, 0), b0)
	c.VMOVDQU32(mem(corr, 64), b1)
	for i := range mr {
		c.VMOVDQA32(b0, acc(i, 0))
		c.VMOVDQA32(b1, acc(i, 1))
	}
	c.MOVL(operand.U32(0x80808080), reg.EAX)
	c.VPBROADCASTD(reg.EAX, x80)

	// group emits one group of 4 k: a(i) addresses the 4 bytes of row i.
	group := func(a func(i int) operand.Mem) {
		c.VMOVDQU32(mem(bp, 0), b0)
		c.VMOVDQU32(mem(bp, 64), b1)
		for i := range mr {
			c.VPBROADCASTD(a(i), bc(i))
			c.VPXORD(x80, bc(i), bc(i))
			vpdpbusd(c, b0, bc(i), acc(i, 0))
			vpdpbusd(c, b1, bc(i), acc(i, 1))
		}
		c.ADDQ(operand.U32(groupBytes), bp)
	}
	groupsAndStore(c, mr, [...]reg.Register{p0, p4, lda, lda3, cp, ldc, kg, tp, ntail}, group, acc, 64, func(v reg.VecPhysical, m operand.Mem) { c.VMOVDQU32(v, m) })
}

// kloop emits the loop over the kg full groups around body.
func kloop(c *build.Context, kg reg.Register, body func()) {
	c.TESTQ(kg, kg)
	c.JZ(operand.LabelRef("tail"))
	c.Instruction(&ir.Instruction{Opcode: "PCALIGN", Operands: []operand.Op{operand.Imm(64)}})
	c.Label("loop")
	body()
	c.DECQ(kg)
	c.JNZ(operand.LabelRef("loop"))
	c.Label("tail")
}

// avx2 emits gemmI8AVX2{mr}: an mr×16 tile (the first 16 columns of the
// block at b; the caller offsets b by 64 bytes for the second half),
// accumulators Y0–Y7 (row i in Y2i, Y2i+1), lo in Y8, h in Y9, products
// in Y10–Y11, and the constants 1 (int16) in Y12, −128 (int16) in Y13,
// 0x7F bytes in Y14 and 0x01 bytes in Y15. B is read from memory.
func avx2(c *build.Context, mr int) {
	p0, p4, lda, lda3, bp, cp, ldc, kg, tp, ntail := prologue(c, "AVX2", "AVX2", mr)
	acc := func(i, v int) reg.VecPhysical { return yregs[2*i+v] }
	lo, h, t0, t1 := yregs[8], yregs[9], yregs[10], yregs[11]
	one16, m128, m7f, m01 := yregs[12], yregs[13], yregs[14], yregs[15]
	for i := range mr {
		c.VPXOR(acc(i, 0), acc(i, 0), acc(i, 0))
		c.VPXOR(acc(i, 1), acc(i, 1), acc(i, 1))
	}
	broadcastConst(c, 0x00010001, reg.X12, one16)
	broadcastConst(c, 0xff80ff80, reg.X13, m128)
	broadcastConst(c, 0x7f7f7f7f, reg.X14, m7f)
	broadcastConst(c, 0x01010101, reg.X15, m01)

	group := func(a func(i int) operand.Mem) {
		for i := range mr {
			c.VPBROADCASTD(a(i), lo)
			c.VPSRLW(operand.U8(7), lo, h) // bit 7 of each byte lands in bit 0 of that byte
			c.VPAND(m01, h, h)             // h = sign bits, 0 or 1
			c.VPAND(m7f, lo, lo)           // lo = low 7 bits
			for v := range 2 {
				c.VPMADDUBSW(mem(bp, 32*v), lo, t0) // int16 pairs of lo·b, |·| ≤ 32512
				c.VPMADDWD(one16, t0, t0)
				c.VPADDD(t0, acc(i, v), acc(i, v))
				c.VPMADDUBSW(mem(bp, 32*v), h, t1) // int16 pairs of h·b, |·| ≤ 256
				c.VPMADDWD(m128, t1, t1)           // −128·(pair sums)
				c.VPADDD(t1, acc(i, v), acc(i, v))
			}
		}
		c.ADDQ(operand.U32(groupBytes), bp)
	}
	groupsAndStore(c, mr, [...]reg.Register{p0, p4, lda, lda3, cp, ldc, kg, tp, ntail}, group, acc, 32, func(v reg.VecPhysical, m operand.Mem) { c.VMOVDQU(v, m) })
}

// groupsAndStore emits the rest of a kernel of mr rows: the loop over the
// kg full groups of A (group, given the address of each row's 4 bytes),
// the tail group from tp when ntail ≠ 0, and C += the two accumulators of
// each row (vectors of vb bytes, stored by st). r holds p0, p4, lda, lda3,
// cp, ldc, kg, tp and ntail of prologue.
func groupsAndStore(c *build.Context, mr int, r [9]reg.Register, group func(a func(i int) operand.Mem),
	acc func(i, v int) reg.VecPhysical, vb int, st func(reg.VecPhysical, operand.Mem)) {
	p0, p4, lda, lda3, cp, ldc, kg, tp, ntail := r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]
	kloop(c, kg, func() {
		group(func(i int) operand.Mem { return rowAddr(i, p0, p4, lda, lda3, 0) })
		c.ADDQ(operand.U8(4), p0)
		if mr > 4 {
			c.ADDQ(operand.U8(4), p4)
		}
	})
	c.Comment("The k mod 4 last values of every row, from tail.")
	c.TESTQ(ntail, ntail)
	c.JZ(operand.LabelRef("store"))
	group(func(i int) operand.Mem { return mem(tp, 4*i) })

	c.Label("store")
	for i := range mr {
		for v := range 2 {
			c.VPADDD(mem(cp, vb*v), acc(i, v), acc(i, v))
			st(acc(i, v), mem(cp, vb*v))
		}
		if i < mr-1 {
			c.ADDQ(ldc, cp)
		}
	}
	c.VZEROUPPER()
	c.RET()
}

// requantSignature is the signature of the requantization kernels.
const requantSignature = "func(rows int, n int, ld int, q []int8, acc []int32, mul []float32, add []float32, lo float32)"

// requant emits requantRows{kind} for vectors of width lanes (16: AVX-512
// zmm, 8: AVX2 ymm): for every r < rows and c < n (n a positive multiple
// of width, rows positive, ld the row stride of q and acc)
//
//	q[r·ld + c] = clamp(roundToEven(float32(acc[r·ld + c])·mul[c] + add[c]), lo, 127)
//
// as VCVTDQ2PS, VMULPS, VADDPS (two roundings, no FMA: bit-identical to
// the Go reference), a float clamp VMAXPS lo / VMINPS 127 (before the
// conversion, so that ±Inf and values beyond ±2³¹ clamp to 127 and lo as
// in Go, where an integer clamp after VCVTPS2DQ would see 0x80000000),
// VCVTPS2DQ (round to nearest even under the default MXCSR), NaN lanes
// zeroed (the ordered compare of the sum with itself as a mask: the
// reference gives 0 for NaN), and the narrowing store of the values, which
// are in [−127, 127]: VPMOVSDB of 16 bytes, or for AVX2 VEXTRACTI128 +
// VPACKSSDW (lanes 0–3 then 4–7) + VPACKSSWB and a VMOVQ of 8 bytes. One
// call for all the rows: the per-call cost would otherwise be that of the
// 4 steps of a row of 64.
func requant(c *build.Context, kind string, width int) {
	name := "requantRows" + kind
	c.Function(name)
	c.Attributes(attr.NOSPLIT)
	c.SignatureExpr(requantSignature)
	c.Pragma("noescape")
	c.Doc(fmt.Sprintf("%s is the body of RequantRows%s: rows > 0, n a positive multiple of %d, lengths are not checked.", name, kind, width))
	rows, n, ld, qp, ap, mp, dp, i := reg.RDX, reg.RCX, reg.R10, reg.RDI, reg.RSI, reg.R8, reg.R9, reg.RBX
	c.Load(c.Param("rows"), rows)
	c.Load(c.Param("n"), n)
	c.Load(c.Param("ld"), ld)
	c.Load(c.Param("q").Base(), qp)
	c.Load(c.Param("acc").Base(), ap)
	c.Load(c.Param("mul").Base(), mp)
	c.Load(c.Param("add").Base(), dp)
	c.Load(c.Param("lo"), reg.X2)
	vecs := zregs
	if width == 8 {
		vecs = yregs
	}
	v, t, lo, hi := vecs[0], vecs[1], vecs[2], vecs[3]
	c.VBROADCASTSS(reg.X2, lo)
	broadcastConst(c, 0x42fe0000, reg.X3, hi) // 127.0
	at := func(base reg.Register, scale uint8) operand.Mem {
		return operand.Mem{Base: base, Index: i, Scale: scale}
	}
	c.Label("row")
	c.XORL(i.As32(), i.As32())
	c.Instruction(&ir.Instruction{Opcode: "PCALIGN", Operands: []operand.Op{operand.Imm(32)}})
	c.Label("loop")
	c.VCVTDQ2PS(at(ap, 4), v)
	c.VMULPS(at(mp, 4), v, v)
	c.VADDPS(at(dp, 4), v, v)
	if width == 16 {
		c.VCMPPS(operand.U8(7), v, v, reg.K1) // K1: the lanes that are not NaN
	} else {
		c.VCMPPS(operand.U8(7), v, v, t) // t: all ones in the lanes that are not NaN
	}
	c.VMAXPS(lo, v, v)
	c.VMINPS(hi, v, v)
	if width == 16 {
		c.VCVTPS2DQ_Z(v, reg.K1, v)
		c.VPMOVSDB(v, at(qp, 1))
	} else {
		x, xt := reg.X0, reg.X1
		c.VCVTPS2DQ(v, v)
		c.VPAND(t, v, v)
		c.VEXTRACTI128(operand.U8(1), v, xt)
		c.VPACKSSDW(xt, x, x) // int16 values 0–3 (x), 4–7 (xt)
		c.VPACKSSWB(x, x, x)
		c.VMOVQ(x, at(qp, 1))
	}
	c.ADDQ(operand.U8(width), i)
	c.CMPQ(i, n)
	c.JB(operand.LabelRef("loop"))
	c.ADDQ(ld, qp)
	c.LEAQ(operand.Mem{Base: ap, Index: ld, Scale: 4}, ap)
	c.DECQ(rows)
	c.JNZ(operand.LabelRef("row"))
	c.VZEROUPPER()
	c.RET()
}

// generatedBy is the command line written into the generated headers.
var generatedBy = []string{"go", "run", "./amd64i8", "(asm/_gen),", "see", "asm/gen_amd64i8.go"}

func run(out, stubs string) error {
	c := build.NewContext()
	c.ConstraintExpr("amd64,!noasm")
	for mr := 1; mr <= maxRowsZ; mr++ {
		vnni(c, mr)
	}
	for mr := 1; mr <= maxRowsY; mr++ {
		avx2(c, mr)
	}
	requant(c, "AVX512", 16)
	requant(c, "AVX2", 8)
	f, err := c.Result()
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if err := pass.Compile.Execute(f); err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	cfg := printer.Config{Argv: generatedBy, Pkg: "asm"}
	for _, o := range []struct {
		file string
		p    printer.Printer
	}{{out, printer.NewGoAsm(cfg)}, {stubs, printer.NewStubs(cfg)}} {
		b, err := o.p.Print(f)
		if err != nil {
			return fmt.Errorf("print %s: %w", o.file, err)
		}
		if err := os.WriteFile(o.file, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.file, err)
		}
	}
	return nil
}

func main() {
	fs := flag.NewFlagSet("amd64i8", flag.ExitOnError)
	out := fs.String("out", "", "assembly output `file`")
	stubs := fs.String("stubs", "", "Go stubs output `file`")
	fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError
	if *out == "" || *stubs == "" {
		log.Fatal("amd64i8: -out and -stubs are required")
	}
	if err := run(*out, *stubs); err != nil {
		log.Fatalf("amd64i8: %v", err)
	}
}
