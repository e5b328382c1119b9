import type { Account, AccountMoney, AccountStats } from '../../domain/accounts/account.js';
import { avatarUrl, usdNumber } from '../http-views.js';

/** The spec's profile shapes, built from domain types. */
/** Fields own and public profiles share; `social_username` only when linked (spec: "if any"). */
function profileFields(account: Account, baseUrl: string) {
  return {
    handle: account.handle,
    display_name: account.displayName,
    avatar_url: avatarUrl(account, baseUrl),
    bio: account.bio,
    wallet_address: account.walletAddress,
    ...(account.socialUsername ? { social_username: account.socialUsername } : {}),
  };
}

/**
 * `nativeUnits`: the available native-token balance (base units) of the account's native ledger
 * account; `native_tokens` is our documented addition to the spec's profile.
 */
export function ownProfileView(account: Account, money: AccountMoney, baseUrl: string, nativeUnits = 0n) {
  return {
    ...profileFields(account, baseUrl),
    earned_usdc: usdNumber(money.availableMicro),
    total_earned: usdNumber(money.totalEarnedMicro),
    total_spent: usdNumber(money.totalSpentMicro),
    native_tokens: nativeUnits.toString(),
  };
}

export function publicProfileView(account: Account, stats: AccountStats, baseUrl: string) {
  return {
    ...profileFields(account, baseUrl),
    follower_count: stats.followerCount,
    following_count: stats.followingCount,
    post_count: stats.postCount,
  };
}

export function updatedProfileView(account: Account, baseUrl: string) {
  return {
    handle: account.handle,
    display_name: account.displayName,
    bio: account.bio,
    avatar_url: avatarUrl(account, baseUrl),
  };
}

/** A new account has moved no money yet. */
export const NO_MONEY: AccountMoney = {
  availableMicro: 0n,
  pendingMicro: 0n,
  totalEarnedMicro: 0n,
  totalSpentMicro: 0n,
};
