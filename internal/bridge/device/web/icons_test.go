package web

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "draw the icons again into the package's folder")

// The icon, in a 32×32 square: a collie's head (ears, eyes, the line of
// its face) in white on the app's blue. One description makes both the
// SVG and the PNGs, so they cannot drift apart.
var (
	iconBlue  = color.NRGBA{0x1d, 0x4e, 0xd8, 0xff}
	iconWhite = color.NRGBA{0xff, 0xff, 0xff, 0xff}
	// face: a cubic Bézier, stroked 3 wide with round ends
	face      = [][2]float64{{8, 22}, {8, 16}, {11.5, 11}, {16, 11}, {20.5, 11}, {24, 16}, {24, 22}}
	faceWidth = 3.0
	eyes      = [][3]float64{{12.5, 17, 1.8}, {19.5, 17, 1.8}} // x, y, r
	ears      = [][3][2]float64{{{9, 12}, {6, 6}, {12, 9}}, {{23, 12}, {26, 6}, {20, 9}}}
)

// icons are the PNG files drawn: name, size, and whether it is maskable
// (the whole square blue, the head inside the middle 80%, which every
// mask keeps).
var icons = []struct {
	name     string
	size     int
	maskable bool
}{
	{"icon-192.png", 192, false},
	{"icon-512.png", 512, false},
	{"icon-maskable-512.png", 512, true},
	{"apple-touch-icon.png", 180, true},
}

func iconSVG() string {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">`)
	b.WriteString(`<rect width="32" height="32" rx="7" fill="#1d4ed8"/>`)
	f := face
	fmt.Fprintf(&b, `<path d="M%g %gC%g %g %g %g %g %gC%g %g %g %g %g %g" fill="none" stroke="#fff" stroke-width="%g" stroke-linecap="round"/>`,
		f[0][0], f[0][1], f[1][0], f[1][1], f[2][0], f[2][1], f[3][0], f[3][1], f[4][0], f[4][1], f[5][0], f[5][1], f[6][0], f[6][1], faceWidth)
	for _, e := range eyes {
		fmt.Fprintf(&b, `<circle cx="%g" cy="%g" r="%g" fill="#fff"/>`, e[0], e[1], e[2])
	}
	for _, t := range ears {
		fmt.Fprintf(&b, `<path d="M%g %gL%g %gL%g %gZ" fill="#fff"/>`, t[0][0], t[0][1], t[1][0], t[1][1], t[2][0], t[2][1])
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// drawIcon rasterises the icon at size×size, 4×4 samples a pixel.
func drawIcon(size int, maskable bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	// The curve as a polyline, for the distance to the stroke.
	var line [][2]float64
	for seg := 0; seg < 2; seg++ {
		p := face[seg*3 : seg*3+4]
		for i := 0; i <= 32; i++ {
			t := float64(i) / 32
			u := 1 - t
			line = append(line, [2]float64{
				u*u*u*p[0][0] + 3*u*u*t*p[1][0] + 3*u*t*t*p[2][0] + t*t*t*p[3][0],
				u*u*u*p[0][1] + 3*u*u*t*p[1][1] + 3*u*t*t*p[2][1] + t*t*t*p[3][1],
			})
		}
	}
	scale, off := 32/float64(size), 0.0
	if maskable {
		// The head in the middle 70%: inside the 80% circle every mask keeps.
		scale, off = 32/(0.7*float64(size)), -0.15*32/0.7
	}
	const n = 4
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var r, g, bl, a float64
			for sy := 0; sy < n; sy++ {
				for sx := 0; sx < n; sx++ {
					x := (float64(px)+(float64(sx)+0.5)/n)*scale + off
					y := (float64(py)+(float64(sy)+0.5)/n)*scale + off
					var c color.NRGBA
					switch {
					case inHead(x, y, line):
						c = iconWhite
					case maskable || inRoundRect(x, y, 32, 7):
						c = iconBlue
					default:
						continue
					}
					r, g, bl, a = r+float64(c.R), g+float64(c.G), bl+float64(c.B), a+1
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(px, py, color.NRGBA{uint8(math.Round(r / a)), uint8(math.Round(g / a)), uint8(math.Round(bl / a)), uint8(math.Round(255 * a / n / n))})
		}
	}
	return img
}

func inHead(x, y float64, line [][2]float64) bool {
	for _, e := range eyes {
		if math.Hypot(x-e[0], y-e[1]) <= e[2] {
			return true
		}
	}
	for _, t := range ears {
		if inTriangle(x, y, t) {
			return true
		}
	}
	if x < 6 || x > 26 || y < 9 || y > 24 { // beyond the stroke's box
		return false
	}
	for i := 1; i < len(line); i++ {
		if segDist(x, y, line[i-1], line[i]) <= faceWidth/2 {
			return true
		}
	}
	return false
}

func inRoundRect(x, y, side, r float64) bool {
	if x < 0 || y < 0 || x > side || y > side {
		return false
	}
	cx := math.Max(r, math.Min(side-r, x))
	cy := math.Max(r, math.Min(side-r, y))
	return math.Hypot(x-cx, y-cy) <= r
}

func inTriangle(x, y float64, t [3][2]float64) bool {
	s := func(a, b [2]float64) float64 { return (x-b[0])*(a[1]-b[1]) - (a[0]-b[0])*(y-b[1]) }
	d1, d2, d3 := s(t[0], t[1]), s(t[1], t[2]), s(t[2], t[0])
	neg := d1 < 0 || d2 < 0 || d3 < 0
	pos := d1 > 0 || d2 > 0 || d3 > 0
	return !(neg && pos)
}

func segDist(x, y float64, a, b [2]float64) float64 {
	dx, dy := b[0]-a[0], b[1]-a[1]
	t := ((x-a[0])*dx + (y-a[1])*dy) / (dx*dx + dy*dy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(x-(a[0]+t*dx), y-(a[1]+t*dy))
}

// TestIconsAreDrawn: the app's icons are drawn here, from one
// description, and the files embedded are exactly what it draws: no
// external asset, and an SVG and PNGs that show the same head. Run with
// -update after changing the drawing.
func TestIconsAreDrawn(t *testing.T) {
	want := map[string][]byte{"icon.svg": []byte(iconSVG())}
	for _, ic := range icons {
		var b bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, drawIcon(ic.size, ic.maskable)); err != nil {
			t.Fatal(err)
		}
		want[ic.name] = b.Bytes()
	}
	for name, body := range want {
		if *update {
			if err := os.WriteFile(name, body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := files.ReadFile(name)
		if err != nil {
			t.Fatalf("%s is not embedded: %v (run go test ./internal/bridge/device/web -update, and embed it)", name, err)
		}
		if !bytes.Equal(got, body) && !*update {
			t.Errorf("%s differs from what the drawing makes; run go test ./internal/bridge/device/web -run TestIconsAreDrawn -update", name)
		}
	}
}
