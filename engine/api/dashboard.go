package api

// The web dashboard's pages (engine/dashboard), served by the same mux as
// the API. Its files are flat: one path segment under PathDashboard.
const (
	PathDashboard      = "/ui/"     // GET → the dashboard's page
	PathDashboardAsset = "/ui/{id}" // GET → one of its files
)
