package io.sumi.store.redis;

import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * For a native image: the ledger's Lua scripts are class-path resources the store reads at start.
 *
 * @since 0.1.0
 */
public final class RedisLedgerRuntimeHints implements RuntimeHintsRegistrar {

    @Override
    public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
        hints.resources().registerPattern("io/sumi/store/redis/*.lua");
    }
}
