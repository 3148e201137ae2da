import type { ErrorTable } from './types.js';

/**
 * Errors of the day-two commands (issue 15): key rotation, certificate renewal,
 * backup and restore, upgrade in place, systemd units.
 */
export const maintenanceErrors = {
  ERR_KEY_NO_CONSUMER: {
    message: 'There is no gateway consumer "{username}"',
    status: 404,
    exit: 1,
    hint: 'List consumers with the admin API, or create one with `hospital-api consumer create {username} --dir {dir}`.',
  },
  ERR_KEY_NOT_FOUND: {
    message: 'Consumer "{username}" has no key-auth credential matching {what}',
    status: 404,
    exit: 1,
    hint: 'List its credentials with `hospital-api consumer keys {username} --dir {dir}`.',
  },
  ERR_KEY_IN_USE: {
    message: 'That key is the one the Hospital API uses now (FHIR_API_KEY): revoking it would stop every platform request',
    status: 409,
    exit: 1,
    hint: 'Rotate it instead: `hospital-api consumer rotate-key {username} --write-env --dir {dir}` switches the API to a new key, then revokes this one.',
  },
  ERR_KEY_ROTATE_FAILED: {
    message: 'Key rotation for "{username}" stopped at "{step}": {detail}',
    status: 502,
    exit: 1,
    hint: 'The old key is still valid and the Hospital API still uses a working key. Fix the cause (`hospital-api status --dir {dir}`) and run `hospital-api consumer rotate-key {username} --dir {dir}` again.',
  },
  ERR_KEY_ROTATED_UNCONFIRMED: {
    message: 'The key of "{username}" was rotated (the Hospital API uses the new key; the old credential {credential} is revoked), but the API did not confirm it reads FHIR with it: {detail}',
    status: 502,
    exit: 1,
    hint: 'Nothing to undo: the old key is gone. See `hospital-api status --dir {dir}` and `GET /api/ready`; `hospital-api verify --dir {dir}` proves the key path.',
  },
  ERR_KEY_RELOAD_FAILED: {
    message: 'The Hospital API did not confirm the new key: {detail}',
    status: 502,
    exit: 1,
    hint: 'Read `hospital-api logs api{dirFlag}`.',
  },
  ERR_CERT_RENEW: {
    message: 'Certificate renewal: {detail}',
    status: 400,
    exit: 1,
    hint: '{hint}',
  },
  ERR_CERT_NOT_PICKED_UP: {
    message: 'The gateway still presents the old certificate after {seconds}s',
    status: 502,
    exit: 1,
    hint: 'Read `hospital-api logs gateway{dirFlag}`; restart it with `hospital-api down{dirFlag} && hospital-api up{dirFlag}` if it does not reload.',
  },
  ERR_BACKUP_FAILED: {
    message: 'Backup failed: {detail}',
    status: 500,
    exit: 1,
    hint: 'Nothing was written to {out}. Fix the cause and run backup again.',
  },
  ERR_BACKUP_PASSPHRASE: {
    message: 'No passphrase for the archive\'s secrets: {detail}',
    status: 400,
    exit: 2,
    hint: 'Set HOSPITAL_API_BACKUP_PASSPHRASE (at least 12 characters), or pass --key-file with a file of at least 32 bytes.',
  },
  ERR_RESTORE_BAD_ARCHIVE: {
    message: 'The archive {file} cannot be restored: {detail}',
    status: 400,
    exit: 1,
    hint: 'Nothing was written. Use an undamaged copy of the archive.',
  },
  ERR_RESTORE_DECRYPT: {
    message: 'The archive\'s secrets do not decrypt: wrong passphrase or key file, or the archive was altered',
    status: 400,
    exit: 1,
    hint: 'Nothing was written. Give the passphrase or key file the backup was made with.',
  },
  ERR_RESTORE_NOT_EMPTY: {
    message: 'Restore needs an empty install directory, and {dir} holds {what}',
    status: 400,
    exit: 2,
    hint: 'Restore into a new --dir, or move the old directory away first.',
  },
  ERR_RESTORE_PARTIAL: {
    message: 'Restore failed ({detail}), and {what} could not be emptied again: it holds part of the backup',
    status: 500,
    exit: 1,
    hint: 'Drop and create those databases again (or remove their volumes) before the next restore; the install directory was left empty.',
  },
  ERR_UPGRADE_FORMAT: {
    message: 'install.json in {dir} has format {found}; this toolkit knows formats up to {known}',
    status: 400,
    exit: 3,
    hint: '{hint}',
  },
  ERR_UPGRADE_FAILED: {
    message: 'Upgrade of {dir} from format {from} stopped at step "{step}": {detail}',
    status: 500,
    exit: 1,
    hint: 'The directory was rolled back to format {from}; the automatic backup is {backup}. Run `hospital-api upgrade --dir {dir}` again once the cause is fixed.',
  },
  ERR_UPGRADE_RUNNING: {
    message: 'The installation in {dir} is running; upgrade migrates a stopped installation',
    status: 409,
    exit: 3,
    hint: 'Stop it first (`hospital-api down --dir {dir}`, or `systemctl stop hospital-api.target`), run upgrade, then start it again.',
  },
  ERR_UPGRADE_PREFLIGHT: {
    message: 'Upgrade of {dir} cannot start: {detail}',
    status: 500,
    exit: 1,
    hint: 'Nothing was changed.',
  },
  ERR_SYSTEMD_OPTIONS: {
    message: 'systemd units: {detail}',
    status: 400,
    exit: 2,
  },
} satisfies ErrorTable;
