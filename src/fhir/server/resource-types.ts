/** The R4 resource types this server stores: every type with search parameters plus those without. */
import { searchableTypes } from '../definitions/search-params.js';

// R4 resource types that have no search parameter of their own in search-parameters.json. Parameters
// is left out on purpose: R4 parameters.html, "there is no RESTful endpoint associated with it".
const WITHOUT_PARAMS = [
  'Binary', 'BiologicallyDerivedProduct', 'CatalogEntry', 'MedicinalProductIngredient', 'MedicinalProductManufactured',
  'ObservationDefinition', 'OperationOutcome', 'SubstanceNucleicAcid', 'SubstancePolymer', 'SubstanceProtein', 'SubstanceReferenceInformation',
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
