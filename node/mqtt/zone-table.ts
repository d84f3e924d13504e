/**
 * The zones of a running broker (zone.ts): per zone, the broker settings its clients see and
 * the limits its wires share. Invariant: one limits object per zone for the broker's life,
 * updated in place by {@link ZoneTable.apply}, because every wire of the zone holds it.
 */
import { limitsFrom, settingsOfZone, type BrokerSettings } from './settings.js'
import type { WireLimits } from './wire.js'
import type { ZoneSettings } from './zone.js'

/** One zone as the broker uses it. */
export interface ZonePart {
  zone: ZoneSettings
  readonly settings: BrokerSettings
  readonly limits: WireLimits
}

/** The zones of one broker, made when first used. */
export class ZoneTable {
  private readonly parts = new Map<string, ZonePart>()

  constructor (private readonly settings: BrokerSettings) {}

  /**
   * Zone `name` (`external` when absent); a zone the configuration does not know has the
   * node-wide settings, as an EMQ X zone without keys had.
   */
  part (name = 'external'): ZonePart {
    let part = this.parts.get(name)
    if (part === undefined) {
      const zone = this.settings.zones[name] ?? { ...this.settings.zones.external, name }
      const settings = settingsOfZone(this.settings, zone)
      part = { zone, settings, limits: limitsFrom(settings) }
      this.parts.set(name, part)
    }
    return part
  }

  /** Applies changed broker settings (the configs API) to every zone in use, in place. */
  apply (next: BrokerSettings): void {
    for (const [name, part] of this.parts) {
      part.zone = next.zones[name] ?? { ...next.zones.external, name }
      Object.assign(part.settings, settingsOfZone(next, part.zone))
      Object.assign(part.limits, limitsFrom(part.settings))
    }
  }
}
