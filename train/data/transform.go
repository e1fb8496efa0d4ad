package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Image is one C×H×W image, channel planes of H rows of W pixels (CHW).
// It is usually a view into a Dataset or a batch buffer.
type Image struct {
	C, H, W int
	Pix     []float32 // len C·H·W
}

func (im Image) check(what string) error {
	if im.C <= 0 || im.H <= 0 || im.W <= 0 || len(im.Pix) != im.C*im.H*im.W {
		return fmt.Errorf("data: %s image: %d pixels for %d×%d×%d", what, len(im.Pix), im.C, im.H, im.W)
	}
	return nil
}

// checkImages checks both images and that they have the same channels.
func checkImages(dst, src Image) error {
	if err := dst.check("destination"); err != nil {
		return err
	}
	if err := src.check("source"); err != nil {
		return err
	}
	if dst.C != src.C {
		return fmt.Errorf("data: %d source channels, %d destination channels", src.C, dst.C)
	}
	return nil
}

// checkPair checks the images (checkImages) and that src fits on dst.
func checkPair(dst, src Image) error {
	if err := checkImages(dst, src); err != nil {
		return err
	}
	if src.H > dst.H || src.W > dst.W {
		return fmt.Errorf("data: a %d×%d image does not fit on a %d×%d canvas", src.H, src.W, dst.H, dst.W)
	}
	return nil
}

// PlaceAt clears dst (the canvas) and copies src into it with its top-left
// pixel at row y0, column x0. src must fit entirely on the canvas, so every
// pixel is kept. dst and src must not overlap.
func PlaceAt(dst, src Image, y0, x0 int) error {
	if err := checkPair(dst, src); err != nil {
		return err
	}
	if y0 < 0 || x0 < 0 || y0+src.H > dst.H || x0+src.W > dst.W {
		return fmt.Errorf("data: a %d×%d image at (%d,%d) does not fit on a %d×%d canvas", src.H, src.W, y0, x0, dst.H, dst.W)
	}
	placeAt(dst, src, y0, x0)
	return nil
}

// placeAt is PlaceAt without the checks.
func placeAt(dst, src Image, y0, x0 int) {
	clear(dst.Pix)
	for c := 0; c < src.C; c++ {
		sp := src.Pix[c*src.H*src.W:]
		dp := dst.Pix[c*dst.H*dst.W:]
		for y := 0; y < src.H; y++ {
			copy(dp[(y0+y)*dst.W+x0:(y0+y)*dst.W+x0+src.W], sp[y*src.W:(y+1)*src.W])
		}
	}
}

// CenterOffset returns the top-left position (row, column) at which a
// sh×sw image sits centered on a dh×dw canvas: ((dh−sh)/2, (dw−sw)/2),
// rounded down. A 28×28 digit on a 40×40 canvas sits at (6, 6).
func CenterOffset(dh, dw, sh, sw int) (y0, x0 int) {
	return (dh - sh) / 2, (dw - sw) / 2
}

// PlaceCenter clears dst and copies src centered on it (see CenterOffset):
// the validation images of docs/semantics.md §5.
func PlaceCenter(dst, src Image) error {
	y0, x0 := CenterOffset(dst.H, dst.W, src.H, src.W)
	return PlaceAt(dst, src, y0, x0)
}

// PlaceRandom clears dst and copies src at a uniformly random position on
// it: the row offset is rng.IntN(dst.H−src.H+1), then the column offset
// rng.IntN(dst.W−src.W+1) (13 possible offsets per axis for 28 on 40), so
// the whole image stays on the canvas (docs/semantics.md §5, training images). It
// returns the offset used; the result is a function of the rng state only.
func PlaceRandom(dst, src Image, rng *rand.Rand) (y0, x0 int, err error) {
	if err := checkPair(dst, src); err != nil {
		return 0, 0, err
	}
	y0 = rng.IntN(dst.H - src.H + 1)
	x0 = rng.IntN(dst.W - src.W + 1)
	placeAt(dst, src, y0, x0)
	return y0, x0, nil
}

// Shift writes src moved down by dy and right by dx pixels into dst, an
// image of the same shape: dst(y, x) = src(y−dy, x−dx), zero where that
// falls outside src. dst and src must not overlap.
func Shift(dst, src Image, dy, dx int) error {
	if err := checkPair(dst, src); err != nil {
		return err
	}
	if dst.H != src.H || dst.W != src.W {
		return fmt.Errorf("data: shift of a %d×%d image into a %d×%d one", src.H, src.W, dst.H, dst.W)
	}
	shift(dst, src, dy, dx)
	return nil
}

// shift is Shift without the checks.
func shift(dst, src Image, dy, dx int) {
	clear(dst.Pix)
	h, w := src.H, src.W
	x0, x1 := max(0, dx), min(w, w+dx) // destination columns that receive a pixel
	if x0 >= x1 {
		return
	}
	for c := 0; c < src.C; c++ {
		sp := src.Pix[c*h*w : (c+1)*h*w]
		dp := dst.Pix[c*h*w : (c+1)*h*w]
		for y := max(0, dy); y < min(h, h+dy); y++ {
			copy(dp[y*w+x0:y*w+x1], sp[(y-dy)*w+x0-dx:(y-dy)*w+x1-dx])
		}
	}
}

// ShiftRandom shifts src into dst (see Shift) by dy = rng.IntN(2·max+1) − max,
// then dx drawn the same way, and returns the shift used (Sabour et al.'s
// augmentation: up to 2 pixels on 28×28 MNIST).
func ShiftRandom(dst, src Image, maxShift int, rng *rand.Rand) (dy, dx int, err error) {
	if maxShift < 0 {
		return 0, 0, fmt.Errorf("data: shift of %d pixels, want ≥ 0", maxShift)
	}
	dy = rng.IntN(2*maxShift+1) - maxShift
	dx = rng.IntN(2*maxShift+1) - maxShift
	return dy, dx, Shift(dst, src, dy, dx)
}

// Affine is an affine map of the image plane about the canvas center,
// composed as: scale, then shear, then rotation, then translation.
//
// Coordinates: x is the column, y the row (pointing down), pixel centers
// at integers, the canvas center c = ((W−1)/2, (H−1)/2) (19.5, 19.5 on
// 40×40). A point p of the (centered, padded) source image moves to
//
//	q = c + t + R(θ)·Sh(φ)·s·(p − c),   t = (TX, TY)
//	Sh(φ) = [1 tan φ; 0 1]              shear: (x, y) → (x + tan(φ)·y, y)
//	R(θ)  = [cos θ  sin θ; −sin θ  cos θ]
//
// so a positive Rotation turns the image counter-clockwise as displayed,
// a positive Shear slants vertical strokes by φ from the vertical with
// their lower end moved right, Scale > 1 enlarges, TX > 0 moves right and
// TY > 0 moves down. Every output pixel q is the bilinear interpolation
// of the source at p = c + A⁻¹(q − c − t), zero outside the source.
// Angles are in degrees.
type Affine struct {
	Rotation float64 // θ, degrees, counter-clockwise as displayed
	Shear    float64 // φ, degrees, in (−90, 90)
	Scale    float64 // s > 0, isotropic; 1 is the identity
	TX, TY   float64 // pixels, right and down
}

// IdentityAffine returns the identity map (Scale 1, everything else 0).
func IdentityAffine() Affine { return Affine{Scale: 1} }

// Matrix returns the linear part A = R(θ)·Sh(φ)·s as [row][column]
// acting on (x, y).
func (a Affine) Matrix() [2][2]float64 {
	th := a.Rotation * math.Pi / 180
	k := math.Tan(a.Shear * math.Pi / 180)
	cs, sn := math.Cos(th), math.Sin(th)
	// R·Sh = [cos, cos·k + sin; −sin, −sin·k + cos]
	return [2][2]float64{
		{a.Scale * cs, a.Scale * (cs*k + sn)},
		{-a.Scale * sn, a.Scale * (cs - sn*k)},
	}
}

// inverse returns A⁻¹ = (1/s)·Sh(φ)⁻¹·R(θ)ᵀ. It is built factor by factor
// (not by inverting Matrix) so that the identity and pure translations
// give exactly 1 and 0 and integer shifts move pixels exactly.
func (a Affine) inverse() ([2][2]float64, error) {
	if !(a.Scale > 0) || math.IsInf(a.Scale, 0) {
		return [2][2]float64{}, fmt.Errorf("data: affine scale %v, want a finite value > 0", a.Scale)
	}
	if !(math.Abs(a.Shear) < 90) {
		return [2][2]float64{}, fmt.Errorf("data: affine shear %v°, want inside (−90°, 90°)", a.Shear)
	}
	if math.IsNaN(a.Rotation) || math.IsInf(a.Rotation, 0) || math.IsNaN(a.TX) || math.IsInf(a.TX, 0) || math.IsNaN(a.TY) || math.IsInf(a.TY, 0) {
		return [2][2]float64{}, fmt.Errorf("data: affine map %+v is not finite", a)
	}
	th := a.Rotation * math.Pi / 180
	k := math.Tan(a.Shear * math.Pi / 180)
	cs, sn := math.Cos(th), math.Sin(th)
	if a.Rotation == 0 {
		cs, sn = 1, 0
	}
	inv := 1 / a.Scale
	// Sh⁻¹ = [1 −k; 0 1], Rᵀ = [cos −sin; sin cos]
	return [2][2]float64{
		{inv * (cs - k*sn), inv * (-sn - k*cs)},
		{inv * sn, inv * cs},
	}, nil
}

// Apply writes into dst the image src under the map a. src is first placed
// centered on dst's canvas (as PlaceCenter, so it may be smaller than dst:
// a 28×28 digit on 40×40 is the padding of docs/semantics.md §6), then mapped about the
// canvas center with bilinear sampling (see Affine). Outputs stay in the
// range of the inputs ([0,1] for dataset images). It does not allocate.
// dst and src must not overlap.
func (a Affine) Apply(dst, src Image) error {
	if err := checkPair(dst, src); err != nil {
		return err
	}
	m, err := a.inverse()
	if err != nil {
		return err
	}
	oy, ox := CenterOffset(dst.H, dst.W, src.H, src.W)
	cx, cy := float64(dst.W-1)/2, float64(dst.H-1)/2
	for c := 0; c < src.C; c++ {
		sp := src.Pix[c*src.H*src.W : (c+1)*src.H*src.W]
		dp := dst.Pix[c*dst.H*dst.W : (c+1)*dst.H*dst.W]
		for qy := 0; qy < dst.H; qy++ {
			dy := float64(qy) - cy - a.TY
			for qx := 0; qx < dst.W; qx++ {
				dx := float64(qx) - cx - a.TX
				// source position in canvas coordinates, then in src's own
				px := m[0][0]*dx + m[0][1]*dy + cx - float64(ox)
				py := m[1][0]*dx + m[1][1]*dy + cy - float64(oy)
				dp[qy*dst.W+qx] = bilinear(sp, src.H, src.W, px, py)
			}
		}
	}
	return nil
}

// bilinear samples the h×w plane p at (x, y), zero outside it.
func bilinear(p []float32, h, w int, x, y float64) float32 {
	if !(x > -1 && y > -1 && x < float64(w) && y < float64(h)) {
		return 0
	}
	fx0, fy0 := math.Floor(x), math.Floor(y)
	x0, y0 := int(fx0), int(fy0)
	fx, fy := x-fx0, y-fy0
	at := func(yy, xx int) float64 {
		if xx < 0 || yy < 0 || xx >= w || yy >= h {
			return 0
		}
		return float64(p[yy*w+xx])
	}
	v := at(y0, x0)
	if fx != 0 || fy != 0 {
		v = (1-fy)*((1-fx)*v+fx*at(y0, x0+1)) + fy*((1-fx)*at(y0+1, x0)+fx*at(y0+1, x0+1))
	}
	// A convex combination of the inputs; clamp away rounding past the ends.
	return float32(math.Min(math.Max(v, 0), 1))
}

// AffineRanges are the bounds of a random affine map: rotation and shear
// uniform in ±MaxRotation and ±MaxShear degrees, scale uniform in
// [MinScale, MaxScale], TX and TY each uniform in ±MaxTranslate pixels.
type AffineRanges struct {
	MaxRotation, MaxShear float64 // degrees
	MinScale, MaxScale    float64
	MaxTranslate          float64 // pixels
}

// AffNISTRanges are the ranges of docs/semantics.md §6: rotation ±20°, shear ±40°,
// scale 0.8–1.2, translation ±8 px in each direction.
var AffNISTRanges = AffineRanges{MaxRotation: 20, MaxShear: 40, MinScale: 0.8, MaxScale: 1.2, MaxTranslate: 8}

// Sample draws a random map from the ranges, using rng in this order:
// rotation, shear, scale, TX, TY (one Float64 each).
func (r AffineRanges) Sample(rng *rand.Rand) Affine {
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	return Affine{
		Rotation: u(-r.MaxRotation, r.MaxRotation),
		Shear:    u(-r.MaxShear, r.MaxShear),
		Scale:    u(r.MinScale, r.MaxScale),
		TX:       u(-r.MaxTranslate, r.MaxTranslate),
		TY:       u(-r.MaxTranslate, r.MaxTranslate),
	}
}

// AffNISTCanvas is the side of the AffNIST canvas (40×40).
const AffNISTCanvas = 40

// affnistStream is the second PCG seed word of the AffNIST generator, so
// that the same user seed gives unrelated streams in different uses.
const affnistStream = 0x61666e697374 // "afnist"

// AffNISTAffine returns the map AffNIST applies to image i for seed: drawn
// by AffNISTRanges.Sample from a PCG seeded with (seed ^ i·0x9e3779b97f4a7c15,
// a fixed stream word), so each image's map depends on (seed, i) only, not
// on the order of generation.
func AffNISTAffine(seed uint64, i int) Affine {
	g := newAffnistGen()
	return g.affine(seed, i)
}

// affnistGen draws AffNIST maps without allocating after creation.
type affnistGen struct {
	pcg *rand.PCG
	rng *rand.Rand
}

func newAffnistGen() affnistGen {
	pcg := rand.NewPCG(0, 0)
	return affnistGen{pcg: pcg, rng: rand.New(pcg)}
}

func (g affnistGen) affine(seed uint64, i int) Affine {
	g.pcg.Seed(seed^(uint64(i)*0x9e3779b97f4a7c15), affnistStream)
	return AffNISTRanges.Sample(g.rng)
}

// AffNIST generates the AffNIST set of docs/semantics.md §6 from src (MNIST-like,
// usually 1×28×28): every image is padded to 40×40 and transformed by a
// random affine map (AffNISTRanges; see Affine for the conventions and
// AffNISTAffine for the seeding). Deterministic for (src, seed). The result
// is named src.Name + "-affnist".
func AffNIST(src *Dataset, seed uint64) (*Dataset, error) {
	if err := src.shapeOK(); err != nil {
		return nil, err
	}
	d, err := NewDataset(src.Name+"-affnist", src.N, src.C, AffNISTCanvas, AffNISTCanvas, src.Classes)
	if err != nil {
		return nil, err
	}
	copy(d.Y, src.Y)
	g := newAffnistGen()
	for i := 0; i < src.N; i++ {
		a := g.affine(seed, i)
		if err := a.Apply(d.Image(i), src.Image(i)); err != nil {
			return nil, fmt.Errorf("data: AffNIST of %s, image %d: %w", src.Name, i, err)
		}
	}
	return d, nil
}

// Family is one kind of affine transformation for the viewpoint-invariance
// analysis of docs/semantics.md §7.
type Family int

// The transformation families. For each, magnitude 0 is the identity:
const (
	FamilyRotation   Family = iota // rotation by magnitude degrees
	FamilyShear                    // shear by magnitude degrees (see Affine)
	FamilyScale                    // scale by the factor 1 + magnitude (0.2 → ×1.2, −0.2 → ×0.8)
	FamilyTranslateX               // translation by magnitude pixels to the right
	FamilyTranslateY               // translation by magnitude pixels down
)

var familyNames = [...]string{"rotation", "shear", "scale", "translate-x", "translate-y"}

// Families lists every transformation family, in order.
func Families() []Family {
	return []Family{FamilyRotation, FamilyShear, FamilyScale, FamilyTranslateX, FamilyTranslateY}
}

// String returns the family's name: rotation, shear, scale, translate-x or
// translate-y.
func (f Family) String() string {
	if f >= 0 && int(f) < len(familyNames) {
		return familyNames[f]
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// ParseFamily returns the family named s (as Family.String prints it).
func ParseFamily(s string) (Family, error) {
	for i, n := range familyNames {
		if n == s {
			return Family(i), nil
		}
	}
	return 0, fmt.Errorf("data: unknown transformation family %q (want rotation, shear, scale, translate-x or translate-y)", s)
}

// FamilyAffine returns the affine map of family f at magnitude m.
func FamilyAffine(f Family, m float64) (Affine, error) {
	a := IdentityAffine()
	switch f {
	case FamilyRotation:
		a.Rotation = m
	case FamilyShear:
		a.Shear = m
	case FamilyScale:
		a.Scale = 1 + m
	case FamilyTranslateX:
		a.TX = m
	case FamilyTranslateY:
		a.TY = m
	default:
		return a, fmt.Errorf("data: unknown transformation family %d", int(f))
	}
	return a, nil
}

// Transform writes into dst the image src transformed by family f at
// magnitude m (see Family), about the center of dst's canvas (src is
// centered on it first, as in Affine.Apply; it may be the same size).
func Transform(dst, src Image, f Family, magnitude float64) error {
	a, err := FamilyAffine(f, magnitude)
	if err != nil {
		return err
	}
	return a.Apply(dst, src)
}

// shapeOK checks the shape and slice lengths (not the values).
func (d *Dataset) shapeOK() error {
	if d.N < 0 || d.C <= 0 || d.H <= 0 || d.W <= 0 || len(d.X) != d.N*d.C*d.H*d.W || len(d.Y) != d.N {
		return fmt.Errorf("data: %s: %d pixels and %d labels for %d images of %d×%d×%d", d.Name, len(d.X), len(d.Y), d.N, d.C, d.H, d.W)
	}
	return nil
}
