package localapi

// partRoutes are the routes of the parts the wiring passes in Config
// (memory, models, devices, cron). A nil part's routes are left out: they
// answer "no such endpoint", like any other path nothing serves.
func partRoutes(cfg Config) []Route {
	var rs []Route
	if cfg.Memory != nil {
		rs = append(rs, memoryRoutes(cfg.Memory)...)
	}
	if cfg.Models != nil {
		rs = append(rs, modelRoutes(cfg.Models)...)
	}
	if cfg.Devices != nil {
		rs = append(rs, deviceRoutes(cfg.Devices)...)
	}
	if cfg.Cron != nil {
		rs = append(rs, cronRoutes(cfg.Cron)...)
	}
	return rs
}
