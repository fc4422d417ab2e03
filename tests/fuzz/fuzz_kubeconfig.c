/* libFuzzer harness for the kubeconfig loader (kube/kubeconfig.c, libyaml): the input is loaded as a kubeconfig
 * file, with its current context and with a fixed context name, and its context names are listed. Nothing is
 * executed (exec plugins are only parsed). Seeds: tests/fuzz/corpus/kubeconfig/. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kube/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	int fd = memfd_create("kubeconfig", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	static const char *const contexts[] = { NULL, "c", "fake-ns" };
	for (size_t i = 0; i < sizeof contexts / sizeof contexts[0]; i++) {
		char *err = NULL;
		struct kube_config *kc = kube_config_load(path, contexts[i], &err);
		kube_config_free(kc);
		free(err);
	}
	size_t n;
	char *err = NULL;
	char **names = kube_config_context_names(path, &n, &err);
	kube_config_names_free(names);
	free(err);
	close(fd);
	return 0;
}
