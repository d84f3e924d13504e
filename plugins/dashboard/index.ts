/**
 * svc_dashboard (docs/dashboard.md): the dashboard listener (18083), its users, sign-in and
 * sessions, and the `admins` commands. The browser app (`dashboard/`) is not built yet.
 */
export { createDashboardPlugin, DASHBOARD_PLUGIN } from './plugin.js'
export { ADMINS_CTL_COMMANDS } from './ctl.js'
export { SESSION_COOKIE, CSRF_HEADER } from './auth.js'
export { DASHBOARD_USERS_TABLE, type DashboardUser } from './users.js'
export { SIGNING_KEYS_TABLE, SESSION_TTL_SECONDS } from './sessions.js'
