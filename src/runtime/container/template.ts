/**
 * Fills a template of templates/ (compose.yaml, stack.yaml). String values are written as JSON
 * strings (valid YAML double-quoted scalars), so no value can break or extend the file.
 */
/** A value inserted as-is (the API's build block), never user input. */
export interface Raw {
  raw: string;
}

export function renderTemplate(template: string, values: Record<string, string | number | Raw>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`template placeholder ${whole} has no value`);
    if (typeof value === 'object') return value.raw;
    return typeof value === 'number' ? String(value) : JSON.stringify(value);
  });
}
