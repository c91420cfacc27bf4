package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

// uplotSHA256 are the checksums of the uPlot files embedded in web/uplot, as in the npm package
// uplot@1.6.32 (tarball sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==).
// To update: `npm pack uplot@<version>`, copy package/dist/uPlot.iife.min.js,
// package/dist/uPlot.min.css and package/LICENSE to web/uplot, and update these sums.
var uplotSHA256 = map[string]string{
	"web/uplot/uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
	"web/uplot/uPlot.min.css":     "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
	"web/uplot/LICENSE":           "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd",
}
