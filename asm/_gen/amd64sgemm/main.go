// Command amd64sgemm generates Capstan's amd64 SGEMM micro-kernels with avo:
// one function, kernel, emits the mr×nr micro-kernel for an ISA (AVX2+FMA on
// 8-lane YMM registers, or AVX-512F on 16-lane ZMM registers), and the list
// tiles says which (mr, nr, isa) are generated. It also emits packA8, the
// AVX2 packing of 8 rows of A for the tiles with mr = 8. It writes three
// files of package asm:
//
//	-out   sgemm_amd64.s        the assembly
//	-stubs sgemm_amd64.go       the unexported //go:noescape declarations
//	-tiles sgemm_tiles_amd64.go the exported, bounds-checked kernels, the
//	                            table SgemmTilesAMD64 and SgemmPackA8AVX2
//
// It is run by go generate in asm (see asm/gen_amd64sgemm.go):
//
//	go run -C _gen ./amd64sgemm -out ../sgemm_amd64.s -stubs ../sgemm_amd64.go -tiles ../sgemm_tiles_amd64.go
//
// Every kernel computes one mr×nr tile of C from packed panels:
//
//	for i < mr, j < nr: s = Σ_{p<kc} a[p*mr+i]·b[p*nr+j]
//	c[i*ldc+j] = alpha·s            if beta == 0 (c not read)
//	c[i*ldc+j] = alpha·s + beta·c   otherwise (one fused multiply-add)
//
// The mr·(nr/width) accumulators stay in registers for the whole k loop,
// which is unrolled by 4. Each k step loads the nr/width vectors of the
// packed B row and broadcasts each of the mr packed A values, either into a
// register that then feeds nr/width FMAs, or (AVX-512, when the register
// file is full) straight from memory as the embedded broadcast operand of
// each FMA. Every element of C is a sequential fused multiply-add chain over
// p, so the result does not depend on mr or nr: only on kc (where the
// blocked driver splits the sum) and on alpha and beta.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
)

// isa describes one vector instruction set the kernels are generated for.
type isa struct {
	name   string // the implementation name in package kernels: "avx2", "avx512"
	suffix string // of the Go function names: "AVX2", "AVX512"
	desc   string // for doc comments: "AVX2+FMA", "AVX-512F"
	width  int    // float32 lanes per vector register
	nregs  int    // vector registers
	memBC  bool   // FMA takes an embedded-broadcast memory operand
	vec    func(i int) reg.VecPhysical
}

var (
	avx2 = isa{"avx2", "AVX2", "AVX2+FMA", 8, 16, false, func(i int) reg.VecPhysical {
		return []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
			reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15}[i]
	}}
	avx512 = isa{"avx512", "AVX512", "AVX-512F", 16, 32, true, func(i int) reg.VecPhysical {
		return []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7,
			reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
			reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23,
			reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}[i]
	}}
)

// tile is one generated micro-kernel.
type tile struct {
	mr, nr int
	isa    isa
}

// tiles are the generated micro-kernels: the two the package always had
// (6×16 AVX2, 8×32 AVX-512) first, then the candidates that
// kernels.BenchmarkSgemmTiles sweeps. Each fits its register file: mr·nr/width
// accumulators, nr/width B vectors and at least one broadcast register
// (AVX2) or two scratch registers for alpha and beta (AVX-512).
var tiles = []tile{
	{6, 16, avx2},
	{8, 32, avx512},
	{4, 24, avx2},
	{8, 8, avx2},
	{12, 8, avx2},
	{12, 32, avx512},
	{14, 32, avx512},
	{6, 48, avx512},
	{8, 48, avx512},
	{4, 64, avx512},
	{6, 64, avx512},
	{16, 16, avx512},
	{24, 16, avx512},
}

// unroll is the unrolling of the k loop (a power of two).
const unroll = 4

// name returns the exported Go name of t, e.g. SgemmKernel6x16AVX2.
func (t tile) name() string { return fmt.Sprintf("SgemmKernel%dx%d%s", t.mr, t.nr, t.isa.suffix) }

// asmName returns the unexported name of the assembly body.
func (t tile) asmName() string { return "s" + t.name()[1:] }

// id is the tile name used by kernels and CAPSTAN_SGEMM_TILE: "avx2-6x16".
func (t tile) id() string { return fmt.Sprintf("%s-%dx%d", t.isa.name, t.mr, t.nr) }

// layout is the register assignment of a tile.
type layout struct {
	acc [][]reg.VecPhysical // acc[i][v]: row i, columns v·width…
	b   []reg.VecPhysical   // the packed B row
	bc  []reg.VecPhysical   // broadcast A values, used in turn; nil: embedded broadcast
}

// plan assigns registers, or reports why t does not fit.
func plan(t tile) (layout, error) {
	w := t.isa.width
	if t.mr < 1 || t.nr < w || t.nr%w != 0 {
		return layout{}, fmt.Errorf("%s: nr=%d is not a positive multiple of the vector width %d", t.id(), t.nr, w)
	}
	nv := t.nr / w
	next := 0
	take := func() reg.VecPhysical { r := t.isa.vec(next); next++; return r }
	var l layout
	for range t.mr {
		row := make([]reg.VecPhysical, nv)
		for v := range row {
			row[v] = take()
		}
		l.acc = append(l.acc, row)
	}
	if t.isa.nregs-next < 2 {
		return layout{}, fmt.Errorf("%s: %d accumulators leave fewer than 2 registers for alpha and beta", t.id(), next)
	}
	if next+nv > t.isa.nregs {
		return layout{}, fmt.Errorf("%s: %d accumulators and %d B vectors exceed %d registers", t.id(), next, nv, t.isa.nregs)
	}
	for range nv {
		l.b = append(l.b, take())
	}
	free := t.isa.nregs - next
	if free < 1 && !t.isa.memBC {
		return layout{}, fmt.Errorf("%s: no register left for the A broadcast", t.id())
	}
	for range min(free, 4) {
		l.bc = append(l.bc, take())
	}
	return l, nil
}

// paramAddr is the frame address of the scalar parameter name.
func paramAddr(c *build.Context, name string) operand.Mem {
	b, err := c.Param(name).Resolve()
	if err != nil {
		log.Fatalf("amd64sgemm: parameter %s: %v", name, err)
	}
	return b.Addr
}

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

// directName returns the exported Go name of t's direct kernel, e.g.
// SgemmDirect8x32AVX512.
func (t tile) directName() string {
	return fmt.Sprintf("SgemmDirect%dx%d%s", t.mr, t.nr, t.isa.suffix)
}

// directAName returns the exported Go name of t's kernel with A read in
// place, e.g. SgemmDirectA8x32AVX512.
func (t tile) directAName() string {
	return fmt.Sprintf("SgemmDirectA%dx%d%s", t.mr, t.nr, t.isa.suffix)
}

// lower returns the unexported name of the assembly body of an exported
// kernel name.
func lower(name string) string { return "s" + name[1:] }

// maxDirectAMR is the largest mr of a kernel with A read in place: its mr
// row offsets take one general register each.
const maxDirectAMR = 8

// mode says where a micro-kernel reads its operands.
type mode int

const (
	packed  mode = iota // A and B packed panels
	directB             // B row p at b[offs[p]:] (kernels/conv_direct.go)
	directA             // A row i at a[aoffs[i]:], B packed
)

// offRegs hold the B row offsets of the unrolled steps of a directB kernel.
var offRegs = []reg.Register{reg.R10, reg.R11, reg.R12, reg.R13}

// aRegs hold the A row offsets of a directA kernel.
var aRegs = []reg.Register{reg.RSI, reg.RDI, reg.R8, reg.R9, reg.R10, reg.R11, reg.R12, reg.R13}

// kernel emits the micro-kernel of t into c in mode md: the packed one;
// its directB twin, whose B row p is not the packed b[p*nr:] but the nr
// consecutive values at b[offs[p]:] (offs []int32), so that a
// convolution's forward reads its input in place; or its directA twin,
// whose A row i is the kc consecutive values at a[aoffs[i]:], so that a
// convolution's filter gradient reads its input in place.
func kernel(c *build.Context, t tile, md mode) error {
	l, err := plan(t)
	if err != nil {
		return err
	}
	w, mr, nr, nv := t.isa.width, t.mr, t.nr, t.nr/t.isa.width
	vb := 4 * w // bytes per vector

	switch md {
	case packed:
		c.Function(t.asmName())
		c.SignatureExpr("func(kc int, a, b, c []float32, ldc int, alpha, beta float32)")
		c.Doc(fmt.Sprintf("%s is the %s body of %s: lengths are not checked.", t.asmName(), t.isa.desc, t.name()))
	case directB:
		c.Function(lower(t.directName()))
		c.SignatureExpr("func(kc int, a, b []float32, offs []int32, c []float32, ldc int, alpha, beta float32)")
		c.Doc(fmt.Sprintf("%s is the %s tile of %s: lengths and offsets are not checked.", lower(t.directName()), t.isa.desc, t.directName()))
	case directA:
		c.Function(lower(t.directAName()))
		c.SignatureExpr("func(kc int, a []float32, aoffs []int32, b, c []float32, ldc int, alpha, beta float32)")
		c.Doc(fmt.Sprintf("%s is the %s tile of %s: lengths and offsets are not checked.", lower(t.directAName()), t.isa.desc, t.directAName()))
	}
	c.Attributes(attr.NOSPLIT)
	c.Pragma("noescape")

	kc, ap, bp, cp, ldc := reg.RCX, reg.RAX, reg.RBX, reg.RDI, reg.RDX
	row, n4, op := reg.R8, reg.R9, reg.RSI
	if md == directA {
		// The A offsets take SI, DI, R8-R13: C's pointer and stride are
		// loaded again for the store, and the k loop counts in DX.
		n4 = reg.RDX
	}
	c.Load(c.Param("kc"), kc)
	c.Load(c.Param("a").Base(), ap)
	c.Load(c.Param("b").Base(), bp)
	if md == directB {
		c.Load(c.Param("offs").Base(), op)
	}
	c.Load(c.Param("c").Base(), cp)
	c.Load(c.Param("ldc"), ldc)
	c.Comment(fmt.Sprintf("%d×%d tile: %d accumulators, %d B vectors, %d broadcast registers", mr, nr, mr*nv, nv, len(l.bc)))
	c.SHLQ(operand.U8(2), ldc)
	for i := range l.acc {
		for _, r := range l.acc[i] {
			c.VXORPS(r, r, r)
		}
	}

	c.Comment("Prefetch every cache line of the tile of C.")
	c.MOVQ(cp, row)
	for i := range mr {
		for off := 0; off < 4*nr; off += 64 {
			c.PREFETCHT0(mem(row, off))
		}
		c.PREFETCHT0(mem(row, 4*nr-4))
		if i < mr-1 {
			c.ADDQ(ldc, row)
		}
	}
	if md == directA {
		c.Comment("The offsets of the A rows.")
		c.Load(c.Param("aoffs").Base(), reg.RDX) // C's stride is done with until the store
		for i := range mr {
			c.MOVLQSX(mem(reg.RDX, 4*i), aRegs[i])
		}
	}

	step := func(u int) {
		if md == directB {
			o := offRegs[u]
			c.MOVLQSX(mem(op, 4*u), o)
			for v, r := range l.b {
				c.VMOVUPS(operand.Mem{Base: bp, Index: o, Scale: 4, Disp: v * vb}, r)
			}
		} else {
			for v, r := range l.b {
				c.VMOVUPS(mem(bp, u*nr*4+v*vb), r)
			}
		}
		for i := range mr {
			a := mem(ap, (u*mr+i)*4)
			if md == directA {
				a = operand.Mem{Base: ap, Index: aRegs[i], Scale: 4, Disp: u * 4}
			}
			if l.bc == nil {
				for v, r := range l.b {
					c.VFMADD231PS_BCST(a, r, l.acc[i][v])
				}
				continue
			}
			bc := l.bc[i%len(l.bc)]
			c.VBROADCASTSS(a, bc)
			for v, r := range l.b {
				c.VFMADD231PS(r, bc, l.acc[i][v])
			}
		}
	}
	// advance moves the operands on by steps k steps.
	advance := func(steps int) {
		switch md {
		case packed:
			c.ADDQ(operand.U32(steps*mr*4), ap)
			c.ADDQ(operand.U32(steps*nr*4), bp)
		case directB:
			c.ADDQ(operand.U32(steps*mr*4), ap)
			c.ADDQ(operand.U32(steps*4), op)
		case directA:
			c.ADDQ(operand.U32(steps*4), ap)
			c.ADDQ(operand.U32(steps*nr*4), bp)
		}
	}

	c.Comment(fmt.Sprintf("k loop, unrolled by %d.", unroll))
	c.MOVQ(kc, n4)
	c.SHRQ(operand.U8(2), n4)
	c.JZ(operand.LabelRef("tail"))
	c.Label("loop")
	for u := range unroll {
		step(u)
	}
	advance(unroll)
	c.DECQ(n4)
	c.JNZ(operand.LabelRef("loop"))

	c.Label("tail")
	c.ANDQ(operand.U8(unroll-1), kc)
	c.JZ(operand.LabelRef("store"))
	c.Label("tailloop")
	step(0)
	advance(1)
	c.DECQ(kc)
	c.JNZ(operand.LabelRef("tailloop"))

	c.Label("store")
	if md == directA {
		c.Load(c.Param("c").Base(), cp)
		c.Load(c.Param("ldc"), ldc)
		c.SHLQ(operand.U8(2), ldc)
	}
	// alpha and beta take the first two registers after the accumulators.
	alpha, beta := t.isa.vec(mr*nv), t.isa.vec(mr*nv+1)
	c.VBROADCASTSS(paramAddr(c, "alpha"), alpha)
	c.VBROADCASTSS(paramAddr(c, "beta"), beta)
	c.Comment("beta == ±0: C = alpha·acc and C is never read.")
	bits := reg.R10L
	c.MOVL(paramAddr(c, "beta"), bits)
	c.SHLL(operand.U8(1), bits)
	c.JNZ(operand.LabelRef("storebeta"))
	store := func(withBeta bool) {
		c.MOVQ(cp, row)
		for i := range mr {
			for v, r := range l.acc[i] {
				c.VMULPS(alpha, r, r)
				if withBeta {
					c.VFMADD231PS(mem(row, v*vb), beta, r)
				}
				c.VMOVUPS(r, mem(row, v*vb))
			}
			if i < mr-1 {
				c.ADDQ(ldc, row)
			}
		}
		c.VZEROUPPER()
		c.RET()
	}
	store(false)
	c.Label("storebeta")
	c.Comment("C = alpha·acc + beta·C.")
	store(true)
	return nil
}

// packA8 emits sgemmPackA8AVX2: the packing of 8 rows of a row-major A
// into one 8-row panel, dst[p*8+i] = a[i*lda+p] for i < 8, p < kc. Blocks
// of 8 k steps are loaded as 8 row vectors, transposed in registers (8×8:
// unpack, shuffle, 128-bit permute) and stored as 64 consecutive values;
// the kc mod 8 last steps are copied one value at a time.
func packA8(c *build.Context) {
	c.Function("sgemmPackA8AVX2")
	c.Attributes(attr.NOSPLIT)
	c.SignatureExpr("func(kc int, a []float32, lda int, dst []float32)")
	c.Pragma("noescape")
	c.Doc("sgemmPackA8AVX2 is the AVX2 body of SgemmPackA8AVX2: lengths are not checked.")
	ap, dst, n, lda, tmp := reg.RSI, reg.RBX, reg.RCX, reg.RDX, reg.EAX
	rows := []reg.Register{reg.RSI, reg.RDI, reg.R8, reg.R9, reg.R10, reg.R11, reg.R12, reg.R13}
	c.Load(c.Param("a").Base(), ap)
	c.Load(c.Param("dst").Base(), dst)
	c.Load(c.Param("lda"), lda)
	c.SHLQ(operand.U8(2), lda)
	c.Comment("Row pointers.")
	for i := 1; i < 8; i++ {
		c.LEAQ(operand.Mem{Base: rows[i-1], Index: lda, Scale: 1}, rows[i])
	}
	c.Load(c.Param("kc"), n)
	c.SHRQ(operand.U8(3), n)
	c.JZ(operand.LabelRef("tail"))
	y := func(i int) reg.VecPhysical { return avx2.vec(i) }
	c.Label("loop")
	for i, r := range rows {
		c.VMOVUPS(mem(r, 0), y(i)) // row i, k steps p…p+7
	}
	c.Comment("8×8 transpose: Y8-Y15 = unpack of row pairs.")
	for j := 0; j < 4; j++ {
		c.VUNPCKLPS(y(2*j+1), y(2*j), y(8+2*j))   // r0[0] r1[0] r0[1] r1[1] | r0[4] …
		c.VUNPCKHPS(y(2*j+1), y(2*j), y(8+2*j+1)) // r0[2] r1[2] r0[3] r1[3] | r0[6] …
	}
	c.Comment("Y0-Y7 = four rows of one k step in each 128-bit lane.")
	for h := 0; h < 2; h++ { // rows 0-3, then 4-7
		t := 8 + 4*h
		c.VSHUFPS(operand.U8(0x44), y(t+2), y(t), y(4*h+0))   // k 0 | k 4
		c.VSHUFPS(operand.U8(0xee), y(t+2), y(t), y(4*h+1))   // k 1 | k 5
		c.VSHUFPS(operand.U8(0x44), y(t+3), y(t+1), y(4*h+2)) // k 2 | k 6
		c.VSHUFPS(operand.U8(0xee), y(t+3), y(t+1), y(4*h+3)) // k 3 | k 7
	}
	c.Comment("Join the halves: Y8-Y15 = k steps 0…7, eight rows each.")
	for q := 0; q < 4; q++ {
		c.VPERM2F128(operand.U8(0x20), y(4+q), y(q), y(8+q))
		c.VPERM2F128(operand.U8(0x31), y(4+q), y(q), y(12+q))
	}
	for q := 0; q < 8; q++ {
		c.VMOVUPS(y(8+q), mem(dst, 32*q))
	}
	for _, r := range rows {
		c.ADDQ(operand.U8(32), r)
	}
	c.ADDQ(operand.U32(256), dst)
	c.DECQ(n)
	c.JNZ(operand.LabelRef("loop"))

	c.Label("tail")
	c.Load(c.Param("kc"), n)
	c.ANDQ(operand.U8(7), n)
	c.JZ(operand.LabelRef("done"))
	c.Label("tailloop")
	for i, r := range rows {
		c.MOVL(mem(r, 0), tmp)
		c.MOVL(tmp, mem(dst, 4*i))
		c.ADDQ(operand.U8(4), r)
	}
	c.ADDQ(operand.U8(32), dst)
	c.DECQ(n)
	c.JNZ(operand.LabelRef("tailloop"))
	c.Label("done")
	c.VZEROUPPER()
	c.RET()
}

func main() {
	// avo's build package registers its own flags on flag.CommandLine.
	fs := flag.NewFlagSet("amd64sgemm", flag.ExitOnError)
	out := fs.String("out", "", "assembly output `file`")
	stubs := fs.String("stubs", "", "Go stubs output `file`")
	tilesOut := fs.String("tiles", "", "Go checked kernels and tile table output `file`")
	fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError
	if *out == "" || *stubs == "" || *tilesOut == "" {
		log.Fatal("amd64sgemm: -out, -stubs and -tiles are required")
	}
	if err := run(*out, *stubs, *tilesOut); err != nil {
		log.Fatalf("amd64sgemm: %v", err)
	}
}

// generatedBy is the command line written into the generated headers (fixed,
// so that the files do not depend on where the generator ran from).
var generatedBy = []string{"go", "run", "./amd64sgemm", "(asm/_gen),", "see", "asm/gen_amd64sgemm.go"}

func run(out, stubs, tilesOut string) error {
	c := build.NewContext()
	c.ConstraintExpr("amd64,!noasm")
	for _, md := range []mode{packed, directB, directA} {
		for _, t := range tiles {
			if md == directA && t.mr > maxDirectAMR {
				continue
			}
			if err := kernel(c, t, md); err != nil {
				return err
			}
		}
	}
	packA8(c)
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
			return err
		}
	}
	src, err := tilesFile(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(tilesOut, src, 0o644)
}

// tilesFile returns the Go source of the exported kernels and the table.
func tilesFile(cfg printer.Config) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// %s\n\n//go:build amd64 && !noasm\n\npackage asm\n", cfg.GeneratedWarning())
	// loop prints the Go loop a kernel is equivalent to, over rows and
	// cols with the product term of step p.
	loop := func(rows, cols, term string) {
		p("// It is equivalent to\n//\n")
		p("//\tfor i := 0; i < %s; i++ {\n", rows)
		p("//\t\tfor j := 0; j < %s; j++ {\n", cols)
		p("//\t\t\tvar s float32\n")
		p("//\t\t\tfor p := 0; p < kc; p++ {\n")
		p("//\t\t\t\ts += %s\n", term)
		p("//\t\t\t}\n")
		p("//\t\t\tif beta == 0 {\n")
		p("//\t\t\t\tc[i*ldc+j] = alpha * s // c not read\n")
		p("//\t\t\t} else {\n")
		p("//\t\t\t\tc[i*ldc+j] = alpha*s + beta*c[i*ldc+j]\n")
		p("//\t\t\t}\n")
		p("//\t\t}\n")
		p("//\t}\n")
		p("//\n// with every sum a chain of fused multiply-adds in the order of p")
	}
	for _, t := range tiles {
		mr, nr := t.mr, t.nr
		p("\n// %s computes one %d×%d tile of C from packed panels with\n", t.name(), mr, nr)
		p("// %s: a holds kc·%d values (a[p*%d+i] is row i of step p), b holds kc·%d\n", t.isa.desc, mr, mr, nr)
		p("// values (b[p*%d+j]), and c at least %d·ldc+%d values. It panics with a\n", nr, mr-1, nr)
		p("// BoundsError if a slice is too short, kc or ldc is negative or ldc < %d.\n", nr)
		loop(fmt.Sprint(mr), fmt.Sprint(nr), fmt.Sprintf("a[p*%d+i] * b[p*%d+j]", mr, nr))
		p(".\n")
		p("func %s(kc int, a, b, c []float32, ldc int, alpha, beta float32) {\n", t.name())
		p("\tif checkSgemmKernel(%q, %d, %d, kc, a, b, c, ldc) {\n", t.name(), mr, nr)
		p("\t\t%s(kc, a, b, c, ldc, alpha, beta)\n\t}\n}\n", t.asmName())
	}
	for _, t := range tiles {
		mr, nr := t.mr, t.nr
		p("\n// %s computes an m×n block of C (m a multiple of %d, n of %d) with\n", t.directName(), mr, nr)
		p("// %s, reading B in place: a holds m/%d packed panels of kc·%d values,\n", t.isa.desc, mr, mr)
		p("// lda ≥ kc·%d apart (a[(i/%d)*lda+p*%d+i%%%d] is row i of step p), and row p\n", mr, mr, mr, mr)
		p("// of B is the n consecutive values b[offs[p]:] (offs holds kc offsets,\n")
		p("// none negative, and b at least max(offs)+n values). It panics with a\n")
		p("// BoundsError on a short slice, a bad offset, stride or dimension.\n")
		loop("m", "n", fmt.Sprintf("a[(i/%d)*lda+p*%d+i%%%d] * b[int(offs[p])+j]", mr, mr, mr))
		p(", the\n// same bits as %s on the packed panels of the same values.\n", t.name())
		p("func %s(m, n, kc int, a []float32, lda int, b []float32, offs []int32, c []float32, ldc int, alpha, beta float32) {\n", t.directName())
		p("\tif !checkSgemmDirect(%q, %d, %d, m, n, kc, a, lda, b, offs, c, ldc) {\n\t\treturn\n\t}\n", t.directName(), mr, nr)
		p("\tfor j := 0; j < n; j += %d {\n", nr)
		p("\t\tfor i := 0; i < m; i += %d {\n", mr)
		p("\t\t\t%s(kc, a[i/%d*lda:], b[j:], offs, c[i*ldc+j:], ldc, alpha, beta)\n", lower(t.directName()), mr)
		p("\t\t}\n\t}\n}\n")
	}
	for _, t := range tiles {
		mr, nr := t.mr, t.nr
		if mr > maxDirectAMR {
			continue
		}
		p("\n// %s computes an m×n block of C (m a multiple of %d, n of %d) with\n", t.directAName(), mr, nr)
		p("// %s, reading A in place: row i of A is the kc consecutive values\n", t.isa.desc)
		p("// a[aoffs[i]:] (aoffs holds m offsets, none negative, and a at least\n")
		p("// max(aoffs)+kc values), and b holds n/%d packed panels of kc·%d values,\n", nr, nr)
		p("// ldb ≥ kc·%d apart (b[(j/%d)*ldb+p*%d+j%%%d] is column j of step p). It\n", nr, nr, nr, nr)
		p("// panics with a BoundsError on a short slice, a bad offset, stride or\n// dimension.\n")
		loop("m", "n", fmt.Sprintf("a[int(aoffs[i])+p] * b[(j/%d)*ldb+p*%d+j%%%d]", nr, nr, nr))
		p(", the\n// same bits as %s on the packed panels of the same values.\n", t.name())
		p("func %s(m, n, kc int, a []float32, aoffs []int32, b []float32, ldb int, c []float32, ldc int, alpha, beta float32) {\n", t.directAName())
		p("\tif !checkSgemmDirectA(%q, %d, %d, m, n, kc, a, aoffs, b, ldb, c, ldc) {\n\t\treturn\n\t}\n", t.directAName(), mr, nr)
		p("\tfor j := 0; j < n; j += %d {\n", nr)
		p("\t\tfor i := 0; i < m; i += %d {\n", mr)
		p("\t\t\t%s(kc, a, aoffs[i:], b[j/%d*ldb:], c[i*ldc+j:], ldc, alpha, beta)\n", lower(t.directAName()), nr)
		p("\t\t}\n\t}\n}\n")
	}
	p("\n// SgemmPackA8AVX2 packs 8 rows of a row-major matrix into one 8-row panel\n")
	p("// of a micro-kernel with MR = 8: dst[p*8+i] = a[i*lda+p] for i < 8, p < kc.\n")
	p("// It needs AVX2. a holds at least 7·lda+kc values, dst 8·kc; it panics\n")
	p("// with a BoundsError otherwise, or if kc or lda is negative.\n")
	p("func SgemmPackA8AVX2(kc int, a []float32, lda int, dst []float32) {\n")
	p("\tif checkSgemmPackA(\"SgemmPackA8AVX2\", 8, kc, a, lda, dst) {\n")
	p("\t\tsgemmPackA8AVX2(kc, a, lda, dst)\n\t}\n}\n")
	p("\n// SgemmTilesAMD64 lists every generated amd64 SGEMM micro-kernel, the\n")
	p("// AVX2 tiles first. The first tile of each ISA is the historical default\n")
	p("// (6×16 AVX2, 8×32 AVX-512); package kernels picks among them per CPU.\n")
	p("// A tile of ISA \"avx2\" needs AVX2 and FMA, one of \"avx512\" AVX-512F.\n")
	p("var SgemmTilesAMD64 = []SgemmTile{\n")
	for _, want := range []string{"avx2", "avx512"} {
		for _, t := range tiles {
			if t.isa.name == want {
				da := "nil"
				if t.mr <= maxDirectAMR {
					da = t.directAName()
				}
				p("\t{Name: %q, ISA: %q, MR: %d, NR: %d, Kernel: %s, Direct: %s, DirectA: %s},\n", t.id(), t.isa.name, t.mr, t.nr, t.name(), t.directName(), da)
			}
		}
	}
	p("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format tiles file: %w\n%s", err, strings.TrimSpace(b.String()))
	}
	return src, nil
}
