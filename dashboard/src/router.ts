/**
 * The router: hash addresses (`/#/clients`), so the listener serves one `index.html` and
 * nothing of the app needs the server to know its paths. Every page but sign-in needs a
 * signed-in user. A user still on the first password is taken to change it at sign-in
 * (Login.vue) and reminded on every page until it is changed (App.vue).
 */
import { createRouter, createWebHashHistory, type RouteRecordRaw } from 'vue-router'
import { NAV, type NavPage } from './nav'
import { checkSession } from './session'

const files = import.meta.glob<{ default: unknown }>('./pages/*.vue')

/** The pages whose file exists. */
export const PAGES: NavPage[] = NAV.filter(p => files[`./pages/${p.page}.vue`] !== undefined)

const routes: RouteRecordRaw[] = [
  { path: '/login', name: 'login', component: files['./pages/Login.vue'] as () => Promise<any>, meta: { title: 'Sign in', public: true } },
  ...PAGES.map((p): RouteRecordRaw => ({
    path: p.path,
    name: p.page,
    component: files[`./pages/${p.page}.vue`] as () => Promise<any>,
    meta: { title: p.title }
  })),
  { path: '/:rest(.*)*', redirect: '/' }
]

export const router = createRouter({ history: createWebHashHistory(), routes })

router.beforeEach(async (to) => {
  const user = await checkSession().catch(() => null)
  if (to.meta.public === true) return user !== null && to.name === 'login' ? { path: '/' } : true
  if (user === null) return { name: 'login', query: to.fullPath === '/' ? {} : { next: to.fullPath } }
  return true
})

router.afterEach((to) => {
  document.title = `${String(to.meta.title ?? 'Dashboard')} - Starling`
})
