// Package dashboardtest drives the web dashboard in a real browser:
// Debian's chromium, headless, through chromedp, against the real
// openclaw-gateway and `openclaw dashboard` binaries (built from this
// module, or taken from $OPENCLAW_UI_BIN, e.g. bin/ after `make build`).
// It is its own package so that chromedp's large generated protocol code
// is compiled only by `make test-ui`, not by every appliance test build.
//
// Only the model (an OpenAI-compatible fake on loopback) and a BlueBubbles
// server (the iMessage bridge on a Mac) are test doubles, both speaking
// their real wire formats.
package dashboardtest
