/**
 * A searched, paginated list refreshed every 5 s (Clients, Subscriptions, Topics): the form
 * the user edits, the filters applied when they press Search, the page shown and its
 * pagination. `fetchPage` asks the API for one page with the applied filters.
 */
import { reactive, ref, shallowRef, type Ref } from 'vue'
import type { PageMeta, Paged } from './api'
import { usePoll } from './poll'

/** The `_page` and `_limit` of the page to fetch. */
export interface Paging { _page: number, _limit: number }

/** What {@link usePagedSearch} gives a page. */
export interface PagedSearch<T, F> {
  /** What the search form holds. */
  form: F
  /** The filters of the list shown (the form's, as of the last Search). */
  applied: F
  /** The rows of the page shown (replaced whole at each refresh, so not deeply reactive). */
  rows: Ref<T[]>
  meta: Ref<PageMeta>
  error: Ref<string | undefined>
  refresh: () => Promise<void>
  /** Applies the form and goes to page 1. */
  search: () => void
  /** Empties the form and searches. */
  reset: () => void
  toPage: (page: number) => void
  toLimit: (limit: number) => void
}

/** A list of `T` searched with filters shaped like `empty`. */
export function usePagedSearch<T, F extends Record<string, string>> (empty: F, fetchPage: (filters: F, paging: Paging) => Promise<Paged<T>>, limit = 20): PagedSearch<T, F> {
  const form = reactive({ ...empty }) as F
  const applied = reactive({ ...empty }) as F
  const rows = shallowRef<T[]>([])
  const meta = ref<PageMeta>({ page: 1, limit, count: 0 })
  const { error, refresh } = usePoll(async () => {
    const page = await fetchPage({ ...applied }, { _page: meta.value.page, _limit: meta.value.limit })
    rows.value = page.data
    meta.value = { ...page.meta, limit: meta.value.limit }
  })
  const search = (): void => {
    Object.assign(applied, form)
    meta.value = { ...meta.value, page: 1 }
    void refresh()
  }
  return {
    form,
    applied,
    rows,
    meta,
    error,
    refresh,
    search,
    reset: () => {
      Object.assign(form, empty)
      search()
    },
    toPage: (page) => {
      meta.value = { ...meta.value, page }
      void refresh()
    },
    toLimit: (limit) => {
      meta.value = { ...meta.value, page: 1, limit }
      void refresh()
    }
  }
}
