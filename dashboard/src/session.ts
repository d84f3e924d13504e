/**
 * Who is signed in, as the pages see it: asked of `GET /api/v3/auth` when the app starts (the
 * session cookie is HttpOnly), set by sign-in, cleared by sign-out and by any answer that says
 * the session ended (api.ts).
 */
import { reactive } from 'vue'
import { get, post, whenSignedOut } from './api'

/** The signed-in user. */
export interface SignedInUser {
  username: string
  tags: string
  must_change_password: boolean
}

/** The session state the pages read. */
export const session = reactive<{ user: SignedInUser | null, checked: boolean }>({ user: null, checked: false })

whenSignedOut(() => { session.user = null })

/** Asks the listener who is signed in (once per app start). */
export async function checkSession (): Promise<SignedInUser | null> {
  if (session.checked) return session.user
  session.user = await get<SignedInUser | null>('/auth')
  session.checked = true
  return session.user
}

/** Signs in; rejects with the API's error (103 wrong name or password, 104 empty, 429 slowed down). */
export async function signIn (username: string, password: string): Promise<SignedInUser> {
  const data = await post<SignedInUser>('/auth', { username, password })
  session.user = { username: data.username, tags: data.tags, must_change_password: data.must_change_password }
  session.checked = true
  return session.user
}

/** Signs out (ends every session of the user). */
export async function signOut (): Promise<void> {
  try {
    await post('/logout')
  } finally {
    session.user = null
  }
}
