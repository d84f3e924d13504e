export { createFlappingDetector, parseFlappingPolicy, FLAPPING_BANNED_BY, FLAPPING_REASON, type FlappingDetector, type FlappingPolicy } from './flapping.js'
