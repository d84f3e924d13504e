/**
 * The request body validators of the management API: each route's JSON schema (`RouteDef.body`)
 * compiled with Ajv into a check that throws the catalogue's codes. Imported by the API server
 * with the first request (api/server.ts `routerOf`), not at start: Ajv is about 13 MB of
 * memory an idle node does not use (issue 22).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { ApiError, CODES, MissingParameterError, WrongTypeError } from '../node/errors.js'
import type { RouteDef } from './route-table.js'

const ajv = new Ajv({ allErrors: false, strict: false })

/** Compiles a route's body schema into a function that throws the spec's codes. */
export function bodyValidator (route: RouteDef): ((body: unknown) => void) | null {
  if (route.body === undefined) return null
  const validate: ValidateFunction = ajv.compile(route.body)
  return (body: unknown) => {
    if (validate(body)) return
    throw fromAjv(validate.errors?.[0], route)
  }
}

/** 107 for a missing field, 108 for a wrong type, a route's own code (115, 116) for its rules. */
function fromAjv (error: ErrorObject | undefined, route: RouteDef): ApiError {
  if (error === undefined) return new WrongTypeError('invalid request body')
  const where = error.instancePath === '' ? 'body' : error.instancePath.slice(1).replace(/\//g, '.')
  if (error.keyword === 'required') {
    const field = (error.params as { missingProperty: string }).missingProperty
    return new MissingParameterError(`missing parameter ${error.instancePath === '' ? field : `${where}.${field}`}`)
  }
  if (error.keyword === 'type') {
    return new WrongTypeError(`parameter ${where} must be ${(error.params as { type: string }).type}`)
  }
  const code = route.fieldCodes?.[error.instancePath.replace(/^\/\d+/, '')] ?? CODES.WRONG_TYPE
  // the code is the route's, read from its fieldCodes at run time: the error is that code's generic kind
  return new ApiError(code, `parameter ${where} ${error.message ?? 'is invalid'}`)
}
