// The API key lives in sessionStorage only: gone when the tab closes, never in localStorage or a
// cookie, never sent anywhere but this origin's API.
const KEY = 'ledgerfeed.apiKey';

export function apiKey() {
  return sessionStorage.getItem(KEY);
}

export function signIn(key) {
  sessionStorage.setItem(KEY, key.trim());
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}
