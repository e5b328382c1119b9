import './health.js';
import './account.js';
import './api-key.js';
import './transaction.js';
import './engagement.js';
import './finance.js';
import './post.js';
import './feed.js';
