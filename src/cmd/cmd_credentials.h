/* cmd_credentials: `kvcon credentials add-ssh-key|remove-ssh-key|set-password NS/NAME --user USER ...`, as
 * virtctl's: the VM's spec.template.spec.accessCredentials names Secrets whose keys (SSH public keys, or a
 * password under the user's name) KubeVirt hands to the guest agent (propagationMethod qemuGuestAgent).
 * add-ssh-key creates a Secret owned by the VM (generateName NAME-ssh-key-) and appends an accessCredentials
 * entry when the user has none (or --create-secret), else adds a data key to the user's Secret; remove-ssh-key
 * drops the key's lines from every Secret of the user (data keys left empty go); set-password sets the user's key
 * in the userPassword Secret. A Secret the VM does not own is changed only with --force. Clusters and the engine
 * service alike, through the source's API (an engine service without Secrets answers 404). */
#ifndef KVCON_CMD_CMD_CREDENTIALS_H
#define KVCON_CMD_CMD_CREDENTIALS_H

int cmd_credentials(int argc, char **argv);

#endif
