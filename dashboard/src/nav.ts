/**
 * The pages of the dashboard, in the order of the side menu: where each is (its path in the
 * address after `#`), its title and its file in `pages/`. A page is a Vue file loaded when it
 * is first opened; adding one is a file in `pages/` and a line here (docs/architecture.md).
 * Entries whose file is not there are left out of the menu and the router.
 */

/** A page of the menu. */
export interface NavPage {
  /** The path after `#`, e.g. `/clients`. */
  path: string
  /** The file in `pages/` without `.vue`. */
  page: string
  title: string
  /** The menu group. */
  group: 'Monitor' | 'Rule engine' | 'Management' | 'Tools' | 'Account'
  /** Pages reached from another page only (details, forms): not in the menu. */
  hidden?: boolean
}

/** Every page. */
export const NAV: NavPage[] = [
  { path: '/', page: 'Overview', title: 'Overview', group: 'Monitor' },
  { path: '/clients', page: 'Clients', title: 'Clients', group: 'Monitor' },
  { path: '/clients/:clientid', page: 'ClientDetail', title: 'Client', group: 'Monitor', hidden: true },
  { path: '/subscriptions', page: 'Subscriptions', title: 'Subscriptions', group: 'Monitor' },
  { path: '/topics', page: 'Topics', title: 'Topics', group: 'Monitor' },
  { path: '/alarms', page: 'Alarms', title: 'Alarms', group: 'Monitor' },
  { path: '/rules', page: 'Rules', title: 'Rules', group: 'Rule engine' },
  { path: '/rules/:id', page: 'RuleEdit', title: 'Rule', group: 'Rule engine', hidden: true },
  { path: '/resources', page: 'Resources', title: 'Resources', group: 'Rule engine' },
  { path: '/schemas', page: 'Schemas', title: 'Schemas', group: 'Rule engine' },
  { path: '/cluster', page: 'Cluster', title: 'Cluster', group: 'Management' },
  { path: '/plugins', page: 'Plugins', title: 'Plugins', group: 'Management' },
  { path: '/listeners', page: 'Listeners', title: 'Listeners', group: 'Management' },
  { path: '/bridges', page: 'Bridges', title: 'Bridges', group: 'Management' },
  { path: '/banned', page: 'Banned', title: 'Banned', group: 'Management' },
  { path: '/applications', page: 'Applications', title: 'Applications', group: 'Management' },
  { path: '/users', page: 'Users', title: 'Users', group: 'Management' },
  { path: '/settings', page: 'Settings', title: 'Settings', group: 'Management' },
  { path: '/websocket', page: 'WebSocket', title: 'WebSocket client', group: 'Tools' },
  { path: '/explorer', page: 'Explorer', title: 'Topic explorer', group: 'Tools' },
  { path: '/account', page: 'Account', title: 'Change password', group: 'Account', hidden: true }
]
