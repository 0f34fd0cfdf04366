package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ClaimTokensTests {

    @Test
    void tokensAreNeverZeroAndDoNotRepeat() {
        ClaimTokens tokens = new ClaimTokens();
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            long token = tokens.next();
            assertThat(token).isNotZero();
            seen.add(token);
        }
        assertThat(seen).hasSize(10_000);
    }
}
