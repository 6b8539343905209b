/** JSON Schema checks for artifacts, with Ajv; loaded only when an artifact has a schema to meet. */
import { Ajv, type ValidateFunction } from 'ajv';

const ajv = new Ajv({ allErrors: true, strict: false });

export const compileSchema = (schema: object): ValidateFunction => ajv.compile(schema);
