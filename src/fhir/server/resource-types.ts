/** The R4 resource types this server stores: every type with search parameters plus those without. */
import { searchableTypes } from '../search/params.js';

// R4 resource types that have no search parameter of their own in search-parameters.json
const WITHOUT_PARAMS = [
  'Binary', 'BiologicallyDerivedProduct', 'CatalogEntry', 'MedicinalProductIngredient', 'MedicinalProductManufactured',
  'ObservationDefinition', 'SubstanceNucleicAcid', 'SubstancePolymer', 'SubstanceProtein', 'SubstanceReferenceInformation',
  'SubstanceSourceMaterial',
];

let types: Set<string> | undefined;

export function resourceTypes(): Set<string> {
  types ??= new Set([...searchableTypes(), ...WITHOUT_PARAMS].sort());
  return types;
}

export function isResourceType(type: string): boolean {
  return resourceTypes().has(type);
}
