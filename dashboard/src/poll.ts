/**
 * Refreshing a page's figures: `load` runs at once, then every `everyMs` while the page is
 * shown and the tab visible; an error is shown once, not every round.
 */
import { onBeforeUnmount, onMounted, ref } from 'vue'
import { errorText } from './notify'

/** Runs `load` now and every `everyMs`; the page's `error` and `loading` flags. */
export function usePoll (load: () => Promise<void>, everyMs = 5000): { error: ReturnType<typeof ref<string>>, refresh: () => Promise<void> } {
  const error = ref<string>('')
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const refresh = async (): Promise<void> => {
    try {
      await load()
      error.value = ''
    } catch (e) {
      error.value = errorText(e)
    }
  }
  const loop = async (): Promise<void> => {
    if (stopped) return
    if (document.visibilityState === 'visible') await refresh()
    if (!stopped) timer = setTimeout(() => { void loop() }, everyMs)
  }
  onMounted(() => { void loop() })
  onBeforeUnmount(() => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
  })
  return { error, refresh }
}
